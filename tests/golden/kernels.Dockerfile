# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:027cfe6f3bc957ac989622e9262aa5e24fdbdaf8e2d54f05398f6044be1ff60c
ARG DEVKIT_IMAGE=stackbuild/stage/devkit:0b42789338250dbef95126706dc021d56454f7c85fbea9693674b181225fceca
FROM ${TOOLKIT_IMAGE} AS toolkit
FROM ${DEVKIT_IMAGE} AS devkit
# stackbuild: component kernels (git master 2222222222222222222222222222222222222222).
FROM toolkit
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=devkit ["/opt/stack/devkit/output", "/opt/stack/devkit/output"]
ENV DEVKIT_HOME="/opt/stack/devkit" \
    PATH="/opt/stack/kernels/output/bin:${PATH}"
COPY ["src/", "/opt/stack/kernels/"]
WORKDIR /opt/stack/kernels
# The build steps and artifact checks are scripts in the build context (steps/), never
# Dockerfile text: whatever they hold, they cannot add an instruction here.
COPY ["steps/", "/opt/stackbuild/steps/kernels/"]
RUN ["/bin/bash", "/opt/stackbuild/steps/kernels/build.sh"]
