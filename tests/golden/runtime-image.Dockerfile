# stackbuild: runtime image, the declared runtime artifacts and the toolkit's
# runtime libraries on the smaller runtime base.
FROM stackbuild/stage/base-runtime:530fbbd00d72a727ba8520610d280b1bf0ac454f16c2321542feb8cb3545e97c
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=stackbuild/stage/toolkit:a89d04186f1b648074fcbf6e4876ef51b8821379ca79d4b4849396e9e7f03378 /usr/local/Ascend/ascend-toolkit/8.5.0/lib64 /usr/local/Ascend/ascend-toolkit/8.5.0/lib64
COPY --from=stackbuild/stage/toolkit:a89d04186f1b648074fcbf6e4876ef51b8821379ca79d4b4849396e9e7f03378 /usr/local/Ascend/ascend-toolkit/8.5.0/x86_64-linux /usr/local/Ascend/ascend-toolkit/8.5.0/x86_64-linux
COPY --from=stackbuild/stage/toolkit:a89d04186f1b648074fcbf6e4876ef51b8821379ca79d4b4849396e9e7f03378 /usr/local/Ascend/ascend-toolkit/8.5.0/opp/version.info /usr/local/Ascend/ascend-toolkit/8.5.0/opp/version.info
COPY --from=stackbuild/stage/toolkit:a89d04186f1b648074fcbf6e4876ef51b8821379ca79d4b4849396e9e7f03378 /usr/local/Ascend/ascend-toolkit/set_env.sh /usr/local/Ascend/ascend-toolkit/set_env.sh
RUN ln -sfn 8.5.0 /usr/local/Ascend/ascend-toolkit/latest
COPY --from=stackbuild/stage/devkit:c4732fa4aa9d7b89816aefe0a0f2e7b5c1b23cb2a8aa8f40d7b13f80ca8dfb6a /opt/stack/devkit/output /opt/stack/devkit/output
COPY --from=stackbuild/stage/kernels:29994d1dacdaca26022d5a48a100202cb7316699f7d64d65b02c1ee1b8670fc1 /opt/stack/kernels/output/bin/00_basic_matmul /opt/stack/kernels/output/bin/00_basic_matmul
ENV ASCEND_TOOLKIT_HOME="/usr/local/Ascend/ascend-toolkit/latest"
ENV ASCEND_HOME_PATH="/usr/local/Ascend/ascend-toolkit/latest"
ENV ASCEND_OPP_PATH="/usr/local/Ascend/ascend-toolkit/latest/opp"
ENV ASCEND_AICPU_PATH="/usr/local/Ascend/ascend-toolkit/latest"
ENV LD_LIBRARY_PATH="/usr/local/Ascend/ascend-toolkit/latest/lib64:/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64/common:/usr/local/Ascend/driver/lib64/driver"
ENV PATH="/usr/local/Ascend/ascend-toolkit/latest/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ENV CMAKE_PREFIX_PATH="/usr/local/Ascend/ascend-toolkit/latest"
ENV DEVKIT_HOME="/opt/stack/devkit"
ENV PATH="/opt/stack/kernels/output/bin:${PATH}"
WORKDIR /opt/stack
