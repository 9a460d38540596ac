# stackbuild: runtime image, the declared runtime artifacts and the toolkit's
# runtime libraries on the smaller runtime base.
FROM stackbuild/stage/base-runtime:530fbbd00d72a727ba8520610d280b1bf0ac454f16c2321542feb8cb3545e97c
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=stackbuild/stage/toolkit:8cc7deaee421ce31db74b6f824957cdc831c348e059f451fa8a81be05adbd2c5 /usr/local/Ascend/ascend-toolkit/8.5.0/lib64 /usr/local/Ascend/ascend-toolkit/8.5.0/lib64
COPY --from=stackbuild/stage/toolkit:8cc7deaee421ce31db74b6f824957cdc831c348e059f451fa8a81be05adbd2c5 /usr/local/Ascend/ascend-toolkit/8.5.0/x86_64-linux /usr/local/Ascend/ascend-toolkit/8.5.0/x86_64-linux
COPY --from=stackbuild/stage/toolkit:8cc7deaee421ce31db74b6f824957cdc831c348e059f451fa8a81be05adbd2c5 /usr/local/Ascend/ascend-toolkit/8.5.0/opp/version.info /usr/local/Ascend/ascend-toolkit/8.5.0/opp/version.info
COPY --from=stackbuild/stage/toolkit:8cc7deaee421ce31db74b6f824957cdc831c348e059f451fa8a81be05adbd2c5 /usr/local/Ascend/ascend-toolkit/set_env.sh /usr/local/Ascend/ascend-toolkit/set_env.sh
RUN ln -sfn 8.5.0 /usr/local/Ascend/ascend-toolkit/latest
COPY --from=stackbuild/stage/devkit:5fc310f08ee40c77e4f77fcd3d1b592d35de6aefad011e9dccb22daf857c5ade /opt/stack/devkit/output /opt/stack/devkit/output
COPY --from=stackbuild/stage/kernels:4683f6af95e6541a3b991ad9968f93da79c6841427f04637bf74797c96f95856 /opt/stack/kernels/output/bin/00_basic_matmul /opt/stack/kernels/output/bin/00_basic_matmul
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
