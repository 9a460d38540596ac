# stackbuild: component devkit (git master 1111111111111111111111111111111111111111).
FROM stackbuild/stage/toolkit:97ee31c901bf5d15fc198061f21c37a7d767f9e520b14f0e32bc3a2fe2ae4d68
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEVKIT_HOME="/opt/stack/devkit"
COPY ["src/", "/opt/stack/devkit/"]
WORKDIR /opt/stack/devkit
# The build steps and artifact checks are scripts in the build context (steps/), never
# Dockerfile text: whatever they hold, they cannot add an instruction here.
COPY ["steps/", "/opt/stackbuild/steps/devkit/"]
RUN ["/bin/bash", "/opt/stackbuild/steps/devkit/build.sh"]
