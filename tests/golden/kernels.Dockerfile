# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:e7cb3ed9929cfd35c0db63e689dca1f7221c8ce57fcfe8ee41f64a04fad075b4
ARG DEVKIT_IMAGE=stackbuild/stage/devkit:9326c96e363964f20671d8c2bf32f21ad839c8aa41cda5f1bd422f172ec67c27
FROM ${TOOLKIT_IMAGE} AS toolkit
FROM ${DEVKIT_IMAGE} AS devkit
# stackbuild: component kernels (git master 2222222222222222222222222222222222222222).
FROM toolkit
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=devkit ["/opt/stack/devkit", "/opt/stack/devkit"]
ENV DEVKIT_HOME="/opt/stack/devkit" \
    PATH="/opt/stack/kernels/output/bin:${PATH}"
COPY ["src/", "/opt/stack/kernels/"]
WORKDIR /opt/stack/kernels
# The build steps and artifact checks are scripts in the build context (steps/), never
# Dockerfile text: whatever they hold, they cannot add an instruction here.
COPY ["steps/", "/opt/stackbuild/steps/kernels/"]
RUN ["/bin/bash", "/opt/stackbuild/steps/kernels/build.sh"]
