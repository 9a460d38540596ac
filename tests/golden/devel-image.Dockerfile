# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:254d3a243daa3493622839773fb48d61247ef128bb40ac644e939e79699acc75
ARG DEVKIT_IMAGE=stackbuild/stage/devkit:d3d44aed4c42a717a4d90fc430030a92592a6d46832ea2e56519fe661cc3f8cd
ARG KERNELS_IMAGE=stackbuild/stage/kernels:6077faf3a025cea968f337509b013c28b4f1d3379164a3356cf911bf55c4185b
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
      org.opencontainers.image.version="8.5.0-910b-ubuntu22.04-py3.11" \
      org.opencontainers.image.created="2024-01-01T00:00:00Z" \
      org.stackbuild.lock.sha256="0a4b2bcd928beb40eea051170d977dc13165b855b6240ca8b6c6dd41ef9fd6e4" \
      org.stackbuild.toolkit.version="8.5.0" \
      org.stackbuild.arch="x86_64" \
      org.stackbuild.host.driver="25.5.0" \
      org.stackbuild.smoke.command="00_basic_matmul 256 512 1024 0" \
      org.stackbuild.smoke.expect="Compare success." \
      org.stackbuild.smoke.needs-device="true" \
      org.stackbuild.component.devkit="https://github.com/hicann/asc-devkit.git@1111111111111111111111111111111111111111" \
      org.stackbuild.component.kernels="https://github.com/hicann/catlass.git@2222222222222222222222222222222222222222"
