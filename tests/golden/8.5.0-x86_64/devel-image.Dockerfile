# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:3a93006f26fda26e2730e40aeb1490633540fe5c804182749bc56f9095ed87a8
ARG ASC_DEVKIT_IMAGE=stackbuild/stage/asc-devkit:0bbe984c3b8d62b6e25d659d5f0060a8992ce18b6b6823f6db6f3698f84380b9
ARG TILELANG_ASCEND_IMAGE=stackbuild/stage/tilelang-ascend:fc5b4c868cedbf65ba57a1e8b09376a12e40cfce29f52aaaada7083a1fa7d7ca
ARG CATLASS_IMAGE=stackbuild/stage/catlass:d0b320967647be84261a52af9a302aa554ef0a421aaba77b2419dafe69107d95
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
COPY --from=tilelang-ascend ["/opt/stack/tilelang-ascend/.python-packages", "/opt/stack/tilelang-ascend/.python-packages"]
COPY --from=catlass ["/opt/stack/catlass/output/bin/00_basic_matmul", "/opt/stack/catlass/output/bin/00_basic_matmul"]
ENV PYTHONPATH="/opt/stack/tilelang-ascend/.python-packages${PYTHONPATH:+:$PYTHONPATH}"
WORKDIR /opt/stack
COPY ["stack.lock.json", "/etc/stackbuild/stack.lock.json"]
LABEL org.opencontainers.image.title="8.5.0 devel image" \
      org.opencontainers.image.version="8.5.0-910b-ubuntu22.04-py3.10" \
      org.opencontainers.image.created="2024-01-01T00:00:00Z" \
      org.stackbuild.lock.sha256="3c65d7342eb0dfbec97eb8fa7a68f7c22f694851dc27c6a8b95e4a89754cf5d4" \
      org.stackbuild.toolkit.version="8.5.0" \
      org.stackbuild.arch="x86_64" \
      org.stackbuild.host.driver="25.5.0" \
      org.stackbuild.smoke.command="/opt/stack/catlass/output/bin/00_basic_matmul 256 512 1024 0" \
      org.stackbuild.smoke.expect="Compare success." \
      org.stackbuild.smoke.needs-device="true" \
      org.stackbuild.component.asc-devkit="https://github.com/hicann/asc-devkit.git@cc982f3abd7628a2ba3ef61063a0c220c9340c53" \
      org.stackbuild.component.tilelang-ascend="https://github.com/tile-ai/tilelang-ascend.git@95acbd7f7283f57f228aa4d016742ea165c03b84" \
      org.stackbuild.component.catlass="https://github.com/hicann/catlass.git@0c1b33a001cfaacefd1de2a1a94bfe540747c538"
