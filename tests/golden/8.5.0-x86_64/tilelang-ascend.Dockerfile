# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:fb4bb62d04f068cd7c9d1c3d10bba9f29da6bdc870a367ae319ef6845acab608
FROM ${TOOLKIT_IMAGE} AS toolkit
# stackbuild: component tilelang-ascend (git ascendc_pto 95acbd7f7283f57f228aa4d016742ea165c03b84).
FROM toolkit
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# Tools that honour it (makeself's tar and header, py_compile's checked-hash .pyc, CMake) date what
# they make by the lock, not by the clock.
ARG SOURCE_DATE_EPOCH=1704067200
# System packages: the lock's .debs (the whole dependency closure), installed from the context by
# apt in its own order, with no network and no package index; debs/install.sh checks each against
# its locked sha256 first and ends a failure with apt's and dpkg's reasons.
COPY ["debs/", "/tmp/stackbuild-debs/"]
RUN ["/bin/bash", "/tmp/stackbuild-debs/install.sh"]
# Python packages: the lock's wheels (dependencies included), installed from the context with no
# index, each checked against its pinned sha256.
COPY ["wheels/", "/tmp/stackbuild-wheels/"]
# pip compiles in its own temporary directory: compiled again in place, reproducibly (checked-hash
# .pyc, a fixed hash seed; a file that does not compile is skipped, as pip skips it).
RUN python3 -m pip install --quiet --no-cache-dir --no-index --no-deps --require-hashes --no-compile \
    --find-links /tmp/stackbuild-wheels --target /opt/stack/tilelang-ascend/.python-packages -r /tmp/stackbuild-wheels/requirements.txt \
 && rm -rf /tmp/stackbuild-wheels \
 && PYTHONHASHSEED=0 python3 -c 'import compileall, py_compile, sys; compileall.compile_dir(sys.argv[1], quiet=2, \
    invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)' /opt/stack/tilelang-ascend/.python-packages
ENV PYTHONPATH="/opt/stack/tilelang-ascend/.python-packages${PYTHONPATH:+:$PYTHONPATH}"
COPY ["src/", "/opt/stack/tilelang-ascend/"]
WORKDIR /opt/stack/tilelang-ascend
# The build steps and artifact checks are scripts in the build context (steps/), never
# Dockerfile text: whatever they hold, they cannot add an instruction here.
COPY ["steps/", "/opt/stackbuild/steps/tilelang-ascend/"]
RUN ["/bin/bash", "/opt/stackbuild/steps/tilelang-ascend/build.sh"]
