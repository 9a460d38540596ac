# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:3a93006f26fda26e2730e40aeb1490633540fe5c804182749bc56f9095ed87a8
ARG ASC_DEVKIT_IMAGE=stackbuild/stage/asc-devkit:0bbe984c3b8d62b6e25d659d5f0060a8992ce18b6b6823f6db6f3698f84380b9
FROM ${TOOLKIT_IMAGE} AS toolkit
FROM ${ASC_DEVKIT_IMAGE} AS asc-devkit
# stackbuild: component catlass (git v1.6.3 0c1b33a001cfaacefd1de2a1a94bfe540747c538).
FROM toolkit
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# Tools that honour it (makeself's tar and header, py_compile's checked-hash .pyc, CMake) date what
# they make by the lock, not by the clock.
ARG SOURCE_DATE_EPOCH=1704067200
COPY --from=asc-devkit ["/opt/stackbuild/installs/asc-devkit/", "/"]
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
