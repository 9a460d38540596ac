# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:c505b6799e41d53afa752ffc8e70327d2d28e1e56520014c86008a35a2f4f82a
ARG ASC_DEVKIT_IMAGE=stackbuild/stage/asc-devkit:0bd1eac8b5baf22354af15b88d3df16175bbfb3d5a467579f8a81d5e8601dce9
ARG TILELANG_ASCEND_IMAGE=stackbuild/stage/tilelang-ascend:44adb2fab4735cd81332ed0484a67c6cdc32855095799f8ec9b255aa93a42e06
ARG CATLASS_IMAGE=stackbuild/stage/catlass:6d977aab2aa76cee482ad5d36569b042505f15b87db24f9bdc90c2dc6ec723eb
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
      org.stackbuild.lock.sha256="4e54ed4cd93dfd68645742b67f070f14841c242286ce6657d35e5310f433903c" \
      org.stackbuild.toolkit.version="8.5.0" \
      org.stackbuild.arch="x86_64" \
      org.stackbuild.host.driver="25.5.0" \
      org.stackbuild.component.asc-devkit="https://github.com/hicann/asc-devkit.git@cc982f3abd7628a2ba3ef61063a0c220c9340c53" \
      org.stackbuild.component.tilelang-ascend="https://github.com/tile-ai/tilelang-ascend.git@95acbd7f7283f57f228aa4d016742ea165c03b84" \
      org.stackbuild.component.catlass="https://github.com/hicann/catlass.git@0c1b33a001cfaacefd1de2a1a94bfe540747c538"
