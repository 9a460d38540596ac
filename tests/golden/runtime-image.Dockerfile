# stackbuild: parent stages (each build argument names the parent's image).
ARG BASE_RUNTIME_IMAGE=stackbuild/stage/base-runtime:c979f8124dad9b19040f74e52a774315545728951a77fa8f1440d0d70e9d16dd
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:e7cb3ed9929cfd35c0db63e689dca1f7221c8ce57fcfe8ee41f64a04fad075b4
ARG DEVKIT_IMAGE=stackbuild/stage/devkit:9326c96e363964f20671d8c2bf32f21ad839c8aa41cda5f1bd422f172ec67c27
ARG KERNELS_IMAGE=stackbuild/stage/kernels:dc01d7233fa2091483e9224a440a395c794fa477ac71decda95e36835eb420e0
FROM ${BASE_RUNTIME_IMAGE} AS base-runtime
FROM ${TOOLKIT_IMAGE} AS toolkit
FROM ${DEVKIT_IMAGE} AS devkit
FROM ${KERNELS_IMAGE} AS kernels
# stackbuild: runtime image, the declared runtime artifacts and the toolkit's
# runtime libraries on the smaller runtime base.
FROM base-runtime
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=toolkit ["/usr/local/Ascend/cann-8.5.0/lib64", "/usr/local/Ascend/cann-8.5.0/lib64"]
COPY --from=toolkit ["/usr/local/Ascend/cann-8.5.0/x86_64-linux", "/usr/local/Ascend/cann-8.5.0/x86_64-linux"]
COPY --from=toolkit ["/usr/local/Ascend/cann-8.5.0/opp/version.info", "/usr/local/Ascend/cann-8.5.0/opp/version.info"]
COPY --from=toolkit ["/usr/local/Ascend/cann-8.5.0/set_env.sh", "/usr/local/Ascend/cann-8.5.0/set_env.sh"]
RUN ln -sfn cann-8.5.0 /usr/local/Ascend/cann
COPY --from=devkit ["/opt/stack/devkit/output", "/opt/stack/devkit/output"]
COPY --from=kernels ["/opt/stack/kernels/output/bin/00_basic_matmul", "/opt/stack/kernels/output/bin/00_basic_matmul"]
ENV ASCEND_TOOLKIT_HOME="/usr/local/Ascend/cann" \
    ASCEND_HOME_PATH="/usr/local/Ascend/cann" \
    ASCEND_OPP_PATH="/usr/local/Ascend/cann/opp" \
    ASCEND_AICPU_PATH="/usr/local/Ascend/cann" \
    LD_LIBRARY_PATH="/usr/local/Ascend/cann/lib64:/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64/common:/usr/local/Ascend/driver/lib64/driver" \
    PATH="/usr/local/Ascend/cann/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    CMAKE_PREFIX_PATH="/usr/local/Ascend/cann" \
    DEVKIT_HOME="/opt/stack/devkit"
ENV PATH="/opt/stack/kernels/output/bin:${PATH}"
WORKDIR /opt/stack
COPY ["stack.lock.json", "/etc/stackbuild/stack.lock.json"]
LABEL org.opencontainers.image.title="golden runtime image" \
      org.opencontainers.image.version="8.5.0-910b-ubuntu22.04-py3.11" \
      org.stackbuild.lock.sha256="0a4b2bcd928beb40eea051170d977dc13165b855b6240ca8b6c6dd41ef9fd6e4" \
      org.stackbuild.toolkit.version="8.5.0" \
      org.stackbuild.arch="x86_64" \
      org.stackbuild.host.driver="25.5.0" \
      org.stackbuild.component.devkit="https://github.com/hicann/asc-devkit.git@1111111111111111111111111111111111111111" \
      org.stackbuild.component.kernels="https://github.com/hicann/catlass.git@2222222222222222222222222222222222222222"
