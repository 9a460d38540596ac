# stackbuild: parent stages (each build argument names the parent's image).
ARG BASE_RUNTIME_IMAGE=stackbuild/stage/base-runtime:b0c1832844884ae30cb0221ab030dfe40a4b90314dca4e32af5b77681fc2e55c
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:d66b603f08e161f377112a2558b3e669beb9ab0dcef6d708b1aeca297932cce7
ARG ASC_DEVKIT_IMAGE=stackbuild/stage/asc-devkit:28f546dd8f0276206cacd7ccaca6150b217b8754a8977258366779198dc8c45c
ARG TILELANG_ASCEND_IMAGE=stackbuild/stage/tilelang-ascend:e338d21a926a498e18dc9b01e41799639ae82b2c6503b9c1bc5632df4df058dc
ARG CATLASS_IMAGE=stackbuild/stage/catlass:68cd9a7adbd5b5e5d0bee176a2a5984c0f37d3583574a0f9b44a75e9cb7aaa23
FROM ${BASE_RUNTIME_IMAGE} AS base-runtime
FROM ${TOOLKIT_IMAGE} AS toolkit
FROM ${ASC_DEVKIT_IMAGE} AS asc-devkit
FROM ${TILELANG_ASCEND_IMAGE} AS tilelang-ascend
FROM ${CATLASS_IMAGE} AS catlass
# stackbuild: runtime image, the declared runtime artifacts and the toolkit's
# runtime libraries on the smaller runtime base. Its ENV (what the toolkit's set_env.sh sets here,
# then the components' variables) and entrypoint are added once it is built (env.Dockerfile.j2).
FROM base-runtime
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=toolkit ["/usr/local/Ascend/cann-8.5.0/lib64", "/usr/local/Ascend/cann-8.5.0/lib64"]
COPY --from=toolkit ["/usr/local/Ascend/cann-8.5.0/devlib", "/usr/local/Ascend/cann-8.5.0/devlib"]
COPY --from=toolkit ["/usr/local/Ascend/cann-8.5.0/x86_64-linux", "/usr/local/Ascend/cann-8.5.0/x86_64-linux"]
COPY --from=toolkit ["/usr/local/Ascend/cann-8.5.0/opp/version.info", "/usr/local/Ascend/cann-8.5.0/opp/version.info"]
COPY --from=toolkit ["/usr/local/Ascend/cann-8.5.0/set_env.sh", "/usr/local/Ascend/cann-8.5.0/set_env.sh"]
RUN ln -sfn cann-8.5.0 /usr/local/Ascend/cann
COPY --from=catlass ["/opt/stack/catlass/output/bin/00_basic_matmul", "/opt/stack/catlass/output/bin/00_basic_matmul"]
WORKDIR /opt/stack
COPY ["stack.lock.json", "/etc/stackbuild/stack.lock.json"]
LABEL org.opencontainers.image.title="8.5.0 runtime image" \
      org.opencontainers.image.version="8.5.0-910b-ubuntu22.04-py3.10" \
      org.opencontainers.image.created="2024-01-01T00:00:00Z" \
      org.stackbuild.lock.sha256="902e2461232e895d9ac9a92d0129a5a9382d7a9e99f000172d02858c38ee762e" \
      org.stackbuild.toolkit.version="8.5.0" \
      org.stackbuild.arch="x86_64" \
      org.stackbuild.host.driver="25.5.0" \
      org.stackbuild.component.asc-devkit="https://github.com/hicann/asc-devkit.git@cc982f3abd7628a2ba3ef61063a0c220c9340c53" \
      org.stackbuild.component.tilelang-ascend="https://github.com/tile-ai/tilelang-ascend.git@95acbd7f7283f57f228aa4d016742ea165c03b84" \
      org.stackbuild.component.catlass="https://github.com/hicann/catlass.git@0c1b33a001cfaacefd1de2a1a94bfe540747c538"
