# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:e7cb3ed9929cfd35c0db63e689dca1f7221c8ce57fcfe8ee41f64a04fad075b4
ARG DEVKIT_IMAGE=stackbuild/stage/devkit:9326c96e363964f20671d8c2bf32f21ad839c8aa41cda5f1bd422f172ec67c27
ARG KERNELS_IMAGE=stackbuild/stage/kernels:dc01d7233fa2091483e9224a440a395c794fa477ac71decda95e36835eb420e0
FROM ${TOOLKIT_IMAGE} AS toolkit
FROM ${DEVKIT_IMAGE} AS devkit
FROM ${KERNELS_IMAGE} AS kernels
# stackbuild: devel image, the whole stack on the toolkit.
FROM toolkit
COPY --from=devkit ["/opt/stack/devkit", "/opt/stack/devkit"]
COPY --from=kernels ["/opt/stack/kernels", "/opt/stack/kernels"]
ENV DEVKIT_HOME="/opt/stack/devkit" \
    PATH="/opt/stack/kernels/output/bin:${PATH}"
WORKDIR /opt/stack
COPY ["stack.lock.json", "/etc/stackbuild/stack.lock.json"]
LABEL org.opencontainers.image.title="golden devel image" \
      org.opencontainers.image.version="8.5.0-910b-ubuntu22.04-py3.11-devel" \
      org.stackbuild.lock.sha256="0a4b2bcd928beb40eea051170d977dc13165b855b6240ca8b6c6dd41ef9fd6e4" \
      org.stackbuild.toolkit.version="8.5.0" \
      org.stackbuild.arch="x86_64" \
      org.stackbuild.host.driver="25.5.0" \
      org.stackbuild.component.devkit="https://github.com/hicann/asc-devkit.git@1111111111111111111111111111111111111111" \
      org.stackbuild.component.kernels="https://github.com/hicann/catlass.git@2222222222222222222222222222222222222222"
