# stackbuild: parent stages (each build argument names the parent's image).
ARG BASE_RUNTIME_IMAGE=stackbuild/stage/base-runtime:e91ca3e96c0f18d9f6b5ca62e01c46a739de09fc5abdb17a1f9398106a44f821
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:67d45573d055827744767046365cc43c3d5277592d2eb0589a27828136cbf7b4
ARG ASC_DEVKIT_IMAGE=stackbuild/stage/asc-devkit:954b5b5e14429a69dc9bcf3deee89d47f7f287720051c3244b590ea4357f4f0f
ARG TILELANG_ASCEND_IMAGE=stackbuild/stage/tilelang-ascend:e9c63f4a28027376d6cd2889393a2b2129046a18d4bebea04618e42e59dbf2d6
ARG CATLASS_IMAGE=stackbuild/stage/catlass:2c79f13d59907ee334c402310a53f394423b19a20526096f44462b6a35e61416
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
