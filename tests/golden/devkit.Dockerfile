# stackbuild: parent stages (each build argument names the parent's image).
ARG TOOLKIT_IMAGE=stackbuild/stage/toolkit:8a71c7892782440b3a62a635c0aee5c275c68a17044534ff63113684bb52b6cf
FROM ${TOOLKIT_IMAGE} AS toolkit
# stackbuild: component devkit (git master 1111111111111111111111111111111111111111).
FROM toolkit
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEVKIT_HOME="/opt/stack/devkit"
COPY ["src/", "/opt/stack/devkit/"]
WORKDIR /opt/stack/devkit
# The build steps and artifact checks are scripts in the build context (steps/), never
# Dockerfile text: whatever they hold, they cannot add an instruction here.
COPY ["steps/", "/opt/stackbuild/steps/devkit/"]
RUN ["/bin/bash", "/opt/stackbuild/steps/devkit/build.sh"]
