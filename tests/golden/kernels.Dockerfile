# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:de6ee4a5e700650b87a155977aef7eb8ab1936aa30aa2ea4dbd1a4a06da52c69
ARG DEVKIT_IMAGE=stackbuild/stage/devkit:65d190c8f0c3f2ab6af8fbfd596049a079a61585ab6cb0d578271893f69daf6b
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
