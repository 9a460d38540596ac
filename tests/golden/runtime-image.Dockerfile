# stackbuild: runtime image, the declared runtime artifacts and the toolkit's
# runtime libraries on the smaller runtime base.
FROM stackbuild/stage/base-runtime:09144a41c53aa2befc631c844181026b15ba421dfcf7bcc9c9408faecbcb8b89
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=stackbuild/stage/toolkit:da3deacc4ce288dc5293cc9860743baaf48f6767ad953180ef21d689b89438df ["/usr/local/Ascend/ascend-toolkit/8.5.0/lib64", "/usr/local/Ascend/ascend-toolkit/8.5.0/lib64"]
COPY --from=stackbuild/stage/toolkit:da3deacc4ce288dc5293cc9860743baaf48f6767ad953180ef21d689b89438df ["/usr/local/Ascend/ascend-toolkit/8.5.0/x86_64-linux", "/usr/local/Ascend/ascend-toolkit/8.5.0/x86_64-linux"]
COPY --from=stackbuild/stage/toolkit:da3deacc4ce288dc5293cc9860743baaf48f6767ad953180ef21d689b89438df ["/usr/local/Ascend/ascend-toolkit/8.5.0/opp/version.info", "/usr/local/Ascend/ascend-toolkit/8.5.0/opp/version.info"]
COPY --from=stackbuild/stage/toolkit:da3deacc4ce288dc5293cc9860743baaf48f6767ad953180ef21d689b89438df ["/usr/local/Ascend/ascend-toolkit/set_env.sh", "/usr/local/Ascend/ascend-toolkit/set_env.sh"]
RUN ln -sfn 8.5.0 /usr/local/Ascend/ascend-toolkit/latest
COPY --from=stackbuild/stage/devkit:d6779229725c77644a1caf0e4e9eb79bc122fbaaab1bdb0428fdb02c201bd67c ["/opt/stack/devkit/output", "/opt/stack/devkit/output"]
COPY --from=stackbuild/stage/kernels:fa44f8e621caa70e214ecaf42ac4eaa2083c1e60f932e935332d7df6e6567a88 ["/opt/stack/kernels/output/bin/00_basic_matmul", "/opt/stack/kernels/output/bin/00_basic_matmul"]
ENV ASCEND_TOOLKIT_HOME="/usr/local/Ascend/ascend-toolkit/latest" \
    ASCEND_HOME_PATH="/usr/local/Ascend/ascend-toolkit/latest" \
    ASCEND_OPP_PATH="/usr/local/Ascend/ascend-toolkit/latest/opp" \
    ASCEND_AICPU_PATH="/usr/local/Ascend/ascend-toolkit/latest" \
    LD_LIBRARY_PATH="/usr/local/Ascend/ascend-toolkit/latest/lib64:/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64/common:/usr/local/Ascend/driver/lib64/driver" \
    PATH="/usr/local/Ascend/ascend-toolkit/latest/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    CMAKE_PREFIX_PATH="/usr/local/Ascend/ascend-toolkit/latest" \
    DEVKIT_HOME="/opt/stack/devkit"
ENV PATH="/opt/stack/kernels/output/bin:${PATH}"
WORKDIR /opt/stack
