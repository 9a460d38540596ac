# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:254d3a243daa3493622839773fb48d61247ef128bb40ac644e939e79699acc75
FROM ${TOOLKIT_IMAGE} AS toolkit
# stackbuild: component devkit (git master 1111111111111111111111111111111111111111).
FROM toolkit
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# Tools that honour it (makeself's tar and header, py_compile's checked-hash .pyc, CMake) date what
# they make by the lock, not by the clock.
ARG SOURCE_DATE_EPOCH=1704067200
ENV DEVKIT_HOME="/opt/stack/devkit"
COPY ["src/", "/opt/stack/devkit/"]
WORKDIR /opt/stack/devkit
# The build steps and artifact checks are scripts in the build context (steps/), never
# Dockerfile text: whatever they hold, they cannot add an instruction here.
COPY ["steps/", "/opt/stackbuild/steps/devkit/"]
RUN ["/bin/bash", "/opt/stackbuild/steps/devkit/build.sh"]
