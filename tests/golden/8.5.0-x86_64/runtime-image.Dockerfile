# stackbuild: parent stages (each build argument names the parent's image).
ARG BASE_RUNTIME_IMAGE=stackbuild/stage/base-runtime:13c0c9c8e5d7768fe6821ca09b6de23ad9b683ff852c98c0c2afc9378480364c
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:3a93006f26fda26e2730e40aeb1490633540fe5c804182749bc56f9095ed87a8
ARG ASC_DEVKIT_IMAGE=stackbuild/stage/asc-devkit:0bbe984c3b8d62b6e25d659d5f0060a8992ce18b6b6823f6db6f3698f84380b9
ARG TILELANG_ASCEND_IMAGE=stackbuild/stage/tilelang-ascend:fc5b4c868cedbf65ba57a1e8b09376a12e40cfce29f52aaaada7083a1fa7d7ca
ARG CATLASS_IMAGE=stackbuild/stage/catlass:d0b320967647be84261a52af9a302aa554ef0a421aaba77b2419dafe69107d95
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
      org.opencontainers.image.version="8.5.0-910b-ubuntu22.04-py3.10-runtime" \
      org.opencontainers.image.created="2024-01-01T00:00:00Z" \
      org.stackbuild.lock.sha256="3c65d7342eb0dfbec97eb8fa7a68f7c22f694851dc27c6a8b95e4a89754cf5d4" \
      org.stackbuild.toolkit.version="8.5.0" \
      org.stackbuild.arch="x86_64" \
      org.stackbuild.host.driver="25.5.0" \
      org.stackbuild.smoke.command="/opt/stack/catlass/output/bin/00_basic_matmul 256 512 1024 0" \
      org.stackbuild.smoke.expect="Compare success." \
      org.stackbuild.smoke.needs-device="true" \
      org.stackbuild.component.catlass="https://github.com/hicann/catlass.git@0c1b33a001cfaacefd1de2a1a94bfe540747c538"
