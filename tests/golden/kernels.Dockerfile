# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:5979dab55ae034d1d9ed28774ffdff7a5dbe3f9a3dd53945db17b15c42241998
ARG DEVKIT_IMAGE=stackbuild/stage/devkit:f8d26fc5008f6fd56a40c93c1d013e26e0e2e261fc1cae5bb7e406bb22dd3895
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
