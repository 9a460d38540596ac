# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:fb4bb62d04f068cd7c9d1c3d10bba9f29da6bdc870a367ae319ef6845acab608
ARG TILELANG_ASCEND_IMAGE=stackbuild/stage/tilelang-ascend:3fcc1f3ef015ddea55aaaf2d1543081344391d29d118355fc776bdc694d07140
ARG CATLASS_IMAGE=stackbuild/stage/catlass:d3d62810186eb3aba422e442b1cc06133c044e83e8ea984dd4dbfc5b8f80c721
FROM ${TOOLKIT_IMAGE} AS toolkit
FROM ${TILELANG_ASCEND_IMAGE} AS tilelang-ascend
FROM ${CATLASS_IMAGE} AS catlass
# stackbuild: devel image, the whole stack on the toolkit.
FROM toolkit
# System packages: the lock's .debs (the whole dependency closure), installed from the context by
# apt in its own order, with no network and no package index; debs/install.sh checks each against
# its locked sha256 first and ends a failure with apt's and dpkg's reasons.
COPY ["debs/", "/tmp/stackbuild-debs/"]
RUN ["/bin/bash", "/tmp/stackbuild-debs/install.sh"]
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
      org.stackbuild.lock.sha256="a4039cfa2d6785e2fcb1c43fbc7eab9b1f587a2dba11029d2f74a7ba6c6232e3" \
      org.stackbuild.toolkit.version="8.5.0" \
      org.stackbuild.arch="x86_64" \
      org.stackbuild.host.driver="25.5.0" \
      org.stackbuild.smoke.command="/opt/stack/catlass/output/bin/00_basic_matmul 256 512 1024 0" \
      org.stackbuild.smoke.expect="Compare success." \
      org.stackbuild.smoke.needs-device="true" \
      org.stackbuild.component.tilelang-ascend="https://github.com/tile-ai/tilelang-ascend.git@95acbd7f7283f57f228aa4d016742ea165c03b84" \
      org.stackbuild.component.catlass="https://github.com/hicann/catlass.git@0c1b33a001cfaacefd1de2a1a94bfe540747c538"
