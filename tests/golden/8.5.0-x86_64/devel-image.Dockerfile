# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:67d45573d055827744767046365cc43c3d5277592d2eb0589a27828136cbf7b4
ARG ASC_DEVKIT_IMAGE=stackbuild/stage/asc-devkit:8bff9d4892669579b0cd91fe4ae667d17a14fd3bea4352059fe36b503a50d876
ARG TILELANG_ASCEND_IMAGE=stackbuild/stage/tilelang-ascend:fdafa1068838c1af5a3532af0395d1b7a3368ef3584f1289caf923ea31c53e65
ARG CATLASS_IMAGE=stackbuild/stage/catlass:aa566cdb6a1eee71858605ca2b55f3666f97f347b05842e4b48eba58e1aeb164
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
COPY --from=tilelang-ascend ["/opt/stack/tilelang-ascend/set_env.sh", "/opt/stack/tilelang-ascend/set_env.sh"]
COPY --from=tilelang-ascend ["/opt/stack/tilelang-ascend/tilelang", "/opt/stack/tilelang-ascend/tilelang"]
COPY --from=tilelang-ascend ["/opt/stack/tilelang-ascend/build", "/opt/stack/tilelang-ascend/build"]
COPY --from=tilelang-ascend ["/opt/stack/tilelang-ascend/src", "/opt/stack/tilelang-ascend/src"]
COPY --from=tilelang-ascend ["/opt/stack/tilelang-ascend/3rdparty/tvm/python", "/opt/stack/tilelang-ascend/3rdparty/tvm/python"]
COPY --from=tilelang-ascend ["/opt/stack/tilelang-ascend/3rdparty/catlass/include", "/opt/stack/tilelang-ascend/3rdparty/catlass/include"]
COPY --from=tilelang-ascend ["/opt/stack/tilelang-ascend/3rdparty/shmem/include", "/opt/stack/tilelang-ascend/3rdparty/shmem/include"]
COPY --from=tilelang-ascend ["/opt/stack/tilelang-ascend/3rdparty/shmem/src/device", "/opt/stack/tilelang-ascend/3rdparty/shmem/src/device"]
COPY --from=tilelang-ascend ["/opt/stack/tilelang-ascend/3rdparty/pto-isa/include", "/opt/stack/tilelang-ascend/3rdparty/pto-isa/include"]
COPY --from=tilelang-ascend ["/opt/stackbuild/installs/tilelang-ascend/", "/"]
COPY --from=catlass ["/opt/stack/catlass/output/bin/00_basic_matmul", "/opt/stack/catlass/output/bin/00_basic_matmul"]
WORKDIR /opt/stack
COPY ["stack.lock.json", "/etc/stackbuild/stack.lock.json"]
LABEL org.opencontainers.image.title="8.5.0 devel image" \
      org.opencontainers.image.version="8.5.0-910b-ubuntu22.04-py3.10" \
      org.opencontainers.image.created="2024-01-01T00:00:00Z" \
      org.stackbuild.lock.sha256="e1c502547a7e505affd9cf0046f36b5db12735ce7f533137356d4df676d99150" \
      org.stackbuild.toolkit.version="8.5.0" \
      org.stackbuild.arch="x86_64" \
      org.stackbuild.host.driver="25.5.0" \
      org.stackbuild.component.asc-devkit="https://github.com/hicann/asc-devkit.git@cc982f3abd7628a2ba3ef61063a0c220c9340c53" \
      org.stackbuild.component.tilelang-ascend="https://github.com/tile-ai/tilelang-ascend.git@95acbd7f7283f57f228aa4d016742ea165c03b84" \
      org.stackbuild.component.catlass="https://github.com/hicann/catlass.git@0c1b33a001cfaacefd1de2a1a94bfe540747c538"
