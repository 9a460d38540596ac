# stackbuild: runtime image, the declared runtime artifacts and the toolkit's
# runtime libraries on the smaller runtime base.
FROM stackbuild/stage/base-runtime:59a7aca9375e89dae698095c0c0d5af84d5b77f4771e28b235c36b1d00b43815
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=stackbuild/stage/toolkit:97ee31c901bf5d15fc198061f21c37a7d767f9e520b14f0e32bc3a2fe2ae4d68 ["/usr/local/Ascend/ascend-toolkit/8.5.0/lib64", "/usr/local/Ascend/ascend-toolkit/8.5.0/lib64"]
COPY --from=stackbuild/stage/toolkit:97ee31c901bf5d15fc198061f21c37a7d767f9e520b14f0e32bc3a2fe2ae4d68 ["/usr/local/Ascend/ascend-toolkit/8.5.0/x86_64-linux", "/usr/local/Ascend/ascend-toolkit/8.5.0/x86_64-linux"]
COPY --from=stackbuild/stage/toolkit:97ee31c901bf5d15fc198061f21c37a7d767f9e520b14f0e32bc3a2fe2ae4d68 ["/usr/local/Ascend/ascend-toolkit/8.5.0/opp/version.info", "/usr/local/Ascend/ascend-toolkit/8.5.0/opp/version.info"]
COPY --from=stackbuild/stage/toolkit:97ee31c901bf5d15fc198061f21c37a7d767f9e520b14f0e32bc3a2fe2ae4d68 ["/usr/local/Ascend/ascend-toolkit/set_env.sh", "/usr/local/Ascend/ascend-toolkit/set_env.sh"]
RUN ln -sfn 8.5.0 /usr/local/Ascend/ascend-toolkit/latest
COPY --from=stackbuild/stage/devkit:eb20564a1aaab80a32ae3e9ab6d4fbdbbc3ef28ce9f28f1cbf96180be5f4424a ["/opt/stack/devkit/output", "/opt/stack/devkit/output"]
COPY --from=stackbuild/stage/kernels:8c417856cdf9b978377b414551648fe70575a0fb7035f5466d40c0ba88fda075 ["/opt/stack/kernels/output/bin/00_basic_matmul", "/opt/stack/kernels/output/bin/00_basic_matmul"]
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
