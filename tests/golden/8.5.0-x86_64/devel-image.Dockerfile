# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:d66b603f08e161f377112a2558b3e669beb9ab0dcef6d708b1aeca297932cce7
ARG ASC_DEVKIT_IMAGE=stackbuild/stage/asc-devkit:28f546dd8f0276206cacd7ccaca6150b217b8754a8977258366779198dc8c45c
ARG TILELANG_ASCEND_IMAGE=stackbuild/stage/tilelang-ascend:e338d21a926a498e18dc9b01e41799639ae82b2c6503b9c1bc5632df4df058dc
ARG CATLASS_IMAGE=stackbuild/stage/catlass:68cd9a7adbd5b5e5d0bee176a2a5984c0f37d3583574a0f9b44a75e9cb7aaa23
FROM ${TOOLKIT_IMAGE} AS toolkit
FROM ${ASC_DEVKIT_IMAGE} AS asc-devkit
FROM ${TILELANG_ASCEND_IMAGE} AS tilelang-ascend
FROM ${CATLASS_IMAGE} AS catlass
# stackbuild: devel image, the whole stack on the toolkit.
FROM toolkit
# System packages: the lock's .debs (the whole dependency closure), installed from the context by
# apt in its own order, with no network and no package index; debs/install.sh checks each against
# its locked sha256 first and ends a failure with apt's and dpkg's reasons.
COPY ["debs/", "/tmp/stackbuild-debs/"]
RUN ["/bin/bash", "/tmp/stackbuild-debs/install.sh"]
COPY --from=asc-devkit ["/opt/stackbuild/installs/asc-devkit/", "/"]
COPY --from=catlass ["/opt/stack/catlass/output/bin/00_basic_matmul", "/opt/stack/catlass/output/bin/00_basic_matmul"]
ENV TL_ROOT="/opt/stack/tilelang-ascend" \
    PYTHONPATH="/opt/stack/tilelang-ascend${PYTHONPATH:+:$PYTHONPATH}" \
    ACL_OP_INIT_MODE="1"
WORKDIR /opt/stack
COPY ["stack.lock.json", "/etc/stackbuild/stack.lock.json"]
LABEL org.opencontainers.image.title="8.5.0 devel image" \
      org.opencontainers.image.version="8.5.0-910b-ubuntu22.04-py3.10-devel" \
      org.opencontainers.image.created="2024-01-01T00:00:00Z" \
      org.stackbuild.lock.sha256="902e2461232e895d9ac9a92d0129a5a9382d7a9e99f000172d02858c38ee762e" \
      org.stackbuild.toolkit.version="8.5.0" \
      org.stackbuild.arch="x86_64" \
      org.stackbuild.host.driver="25.5.0" \
      org.stackbuild.component.asc-devkit="https://github.com/hicann/asc-devkit.git@cc982f3abd7628a2ba3ef61063a0c220c9340c53" \
      org.stackbuild.component.tilelang-ascend="https://github.com/tile-ai/tilelang-ascend.git@95acbd7f7283f57f228aa4d016742ea165c03b84" \
      org.stackbuild.component.catlass="https://github.com/hicann/catlass.git@0c1b33a001cfaacefd1de2a1a94bfe540747c538"
