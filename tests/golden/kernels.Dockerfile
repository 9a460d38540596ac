# stackbuild: component kernels (git master 2222222222222222222222222222222222222222).
FROM stackbuild/stage/toolkit:1f8eb9319a43df499ab6d827871e9032229b52517774d507275a59df716b03f0
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=stackbuild/stage/devkit:1e7ccfd16a06562073d4882b1f2efe786fe686d26ce70697f48c74c5405cb1d9 ["/opt/stack/devkit", "/opt/stack/devkit"]
ENV DEVKIT_HOME="/opt/stack/devkit" \
    PATH="/opt/stack/kernels/output/bin:${PATH}"
COPY ["src/", "/opt/stack/kernels/"]
WORKDIR /opt/stack/kernels
# The build steps and artifact checks are scripts in the build context (steps/), never
# Dockerfile text: whatever they hold, they cannot add an instruction here.
COPY ["steps/", "/opt/stackbuild/steps/kernels/"]
RUN ["/bin/bash", "/opt/stackbuild/steps/kernels/build.sh"]
