# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:027cfe6f3bc957ac989622e9262aa5e24fdbdaf8e2d54f05398f6044be1ff60c
ARG DEVKIT_IMAGE=stackbuild/stage/devkit:0b42789338250dbef95126706dc021d56454f7c85fbea9693674b181225fceca
ARG KERNELS_IMAGE=stackbuild/stage/kernels:0120f73d658f1b01d0713abd301df869dd7f6e1aaa91ad6d38aac285147a757a
FROM ${TOOLKIT_IMAGE} AS toolkit
FROM ${DEVKIT_IMAGE} AS devkit
FROM ${KERNELS_IMAGE} AS kernels
# stackbuild: devel image, the whole stack on the toolkit.
FROM toolkit
COPY --from=devkit ["/opt/stack/devkit/output", "/opt/stack/devkit/output"]
COPY --from=kernels ["/opt/stack/kernels/output/bin/00_basic_matmul", "/opt/stack/kernels/output/bin/00_basic_matmul"]
COPY --from=kernels ["/opt/stack/kernels/output/lib", "/opt/stack/kernels/output/lib"]
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
