# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:fb4bb62d04f068cd7c9d1c3d10bba9f29da6bdc870a367ae319ef6845acab608
FROM ${TOOLKIT_IMAGE} AS toolkit
# stackbuild: component catlass (git v1.6.3 0c1b33a001cfaacefd1de2a1a94bfe540747c538).
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
COPY ["src/", "/opt/stack/catlass/"]
WORKDIR /opt/stack/catlass
# The build steps and artifact checks are scripts in the build context (steps/), never
# Dockerfile text: whatever they hold, they cannot add an instruction here.
COPY ["steps/", "/opt/stackbuild/steps/catlass/"]
RUN ["/bin/bash", "/opt/stackbuild/steps/catlass/build.sh"]
