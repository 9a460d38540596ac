# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:3a93006f26fda26e2730e40aeb1490633540fe5c804182749bc56f9095ed87a8
FROM ${TOOLKIT_IMAGE} AS toolkit
# stackbuild: component asc-devkit (git v8.5.0 cc982f3abd7628a2ba3ef61063a0c220c9340c53).
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
COPY ["src/", "/opt/stack/asc-devkit/"]
WORKDIR /opt/stack/asc-devkit
# The build steps and artifact checks are scripts in the build context (steps/), never
# Dockerfile text: whatever they hold, they cannot add an instruction here.
COPY ["steps/", "/opt/stackbuild/steps/asc-devkit/"]
RUN ["/bin/bash", "/opt/stackbuild/steps/asc-devkit/build.sh"]
