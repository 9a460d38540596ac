# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:f322b1e1f17b0863d3bd05a85d7954d2f5cf8a35dfbd971ff05dabf27a9a4f43
ARG DEVKIT_IMAGE=stackbuild/stage/devkit:8396cd7fcc9b5d66f71cd5267065c3b60a36d74783fe7dff46e0940c5481b687
FROM ${TOOLKIT_IMAGE} AS toolkit
FROM ${DEVKIT_IMAGE} AS devkit
# stackbuild: component kernels (git master 2222222222222222222222222222222222222222).
FROM toolkit
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# Tools that honour it (makeself's tar and header, py_compile's checked-hash .pyc, CMake) date what
# they make by the lock, not by the clock.
ARG SOURCE_DATE_EPOCH=1704067200
COPY --from=devkit ["/opt/stack/devkit/output", "/opt/stack/devkit/output"]
ENV DEVKIT_HOME="/opt/stack/devkit" \
    PATH="/opt/stack/kernels/output/bin:${PATH}"
COPY ["src/", "/opt/stack/kernels/"]
WORKDIR /opt/stack/kernels
# The build steps and artifact checks are scripts in the build context (steps/), never
# Dockerfile text: whatever they hold, they cannot add an instruction here.
COPY ["steps/", "/opt/stackbuild/steps/kernels/"]
RUN ["/bin/bash", "/opt/stackbuild/steps/kernels/build.sh"]
