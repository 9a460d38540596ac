# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:742d9f5363860941fdfb6fa337d498be5a76f55179a0f274cfc6fa3cec5ea6b1
ARG DEVKIT_IMAGE=stackbuild/stage/devkit:970e9de47425fd973c90f962f03ff9d1407d38db53e55f6b1958e1427fb668d0
ARG KERNELS_IMAGE=stackbuild/stage/kernels:7a23da1242ccd5f306e06c9efe6cb386f649ed419eaf54f0c018c985a4832e80
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
