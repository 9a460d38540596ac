# stackbuild: component devkit (git master 1111111111111111111111111111111111111111).
FROM stackbuild/stage/toolkit:1f8eb9319a43df499ab6d827871e9032229b52517774d507275a59df716b03f0
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEVKIT_HOME="/opt/stack/devkit"
COPY ["src/", "/opt/stack/devkit/"]
WORKDIR /opt/stack/devkit
# The build steps and artifact checks are scripts in the build context (steps/), never
# Dockerfile text: whatever they hold, they cannot add an instruction here.
COPY ["steps/", "/opt/stackbuild/steps/devkit/"]
RUN ["/bin/bash", "/opt/stackbuild/steps/devkit/build.sh"]
