# stackbuild: parent stages (each build argument names the parent's image).
ARG BASE_RUNTIME_IMAGE=stackbuild/stage/base-runtime:28547533dee8f609f2631e0c3df5f0b1f9e466328880cda417a68e453754ec09
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:e637f9cf6c96245d8ece4ba1e05d217076c7e2e8b06e91663d0ae10a82ee5ba7
ARG ASC_DEVKIT_IMAGE=stackbuild/stage/asc-devkit:5b33c06ceb40df3ee9e9863535114acb9865821b9e747dbfa54d2a44cbf7f58c
ARG TILELANG_ASCEND_IMAGE=stackbuild/stage/tilelang-ascend:cb62a1278ee6e748af150aa08c819e5196a226f1aa3e785382e54df825298b26
ARG CATLASS_IMAGE=stackbuild/stage/catlass:dcb86099e3d5553684ec9cd3fb8d2b833ba8b94614399a5d1ccc25c600f34e6e
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
      org.stackbuild.lock.sha256="39b3f9f9f3f144824e39f1a31c0797df56e829c4fa958af10acdcd2b62c38524" \
      org.stackbuild.toolkit.version="8.5.0" \
      org.stackbuild.arch="x86_64" \
      org.stackbuild.host.driver="25.5.0" \
      org.stackbuild.smoke.command="/opt/stack/catlass/output/bin/00_basic_matmul 256 512 1024 0" \
      org.stackbuild.smoke.expect="Compare success." \
      org.stackbuild.smoke.needs-device="true" \
      org.stackbuild.component.catlass="https://github.com/hicann/catlass.git@0c1b33a001cfaacefd1de2a1a94bfe540747c538"
