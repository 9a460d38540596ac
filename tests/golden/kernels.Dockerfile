# stackbuild: component kernels (git master 2222222222222222222222222222222222222222).
FROM stackbuild/stage/toolkit:50dca61c662ab1cbcaf4c1c67df7a47fe3efe48839714bb4544de54c535a84c0
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=stackbuild/stage/devkit:de61fe623bc3ceb07eabd60f2e5679ccda22108881de8e1da268a0a98a182728 ["/opt/stack/devkit", "/opt/stack/devkit"]
ENV DEVKIT_HOME="/opt/stack/devkit" \
    PATH="/opt/stack/kernels/output/bin:${PATH}"
COPY ["src/", "/opt/stack/kernels/"]
WORKDIR /opt/stack/kernels
# The build steps and artifact checks are scripts in the build context (steps/), never
# Dockerfile text: whatever they hold, they cannot add an instruction here.
COPY ["steps/", "/opt/stackbuild/steps/kernels/"]
RUN ["/bin/bash", "/opt/stackbuild/steps/kernels/build.sh"]
