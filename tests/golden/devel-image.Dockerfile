# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:742d9f5363860941fdfb6fa337d498be5a76f55179a0f274cfc6fa3cec5ea6b1
ARG DEVKIT_IMAGE=stackbuild/stage/devkit:32c8c604599dbceeaec628309f6aaa2bbc079743f8d3ed310c173747dd48154f
ARG KERNELS_IMAGE=stackbuild/stage/kernels:8270ac9cd25c2e0ba94a3be36ae930467ce8792f9f23796d1d5aa136bf3f4917
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
