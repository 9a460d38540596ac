# stackbuild: component devkit (git master 1111111111111111111111111111111111111111).
FROM stackbuild/stage/toolkit:50dca61c662ab1cbcaf4c1c67df7a47fe3efe48839714bb4544de54c535a84c0
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEVKIT_HOME="/opt/stack/devkit"
COPY ["src/", "/opt/stack/devkit/"]
WORKDIR /opt/stack/devkit
# The build steps and artifact checks are scripts in the build context (steps/), never
# Dockerfile text: whatever they hold, they cannot add an instruction here.
COPY ["steps/", "/opt/stackbuild/steps/devkit/"]
RUN ["/bin/bash", "/opt/stackbuild/steps/devkit/build.sh"]
