# stackbuild: component kernels (git master 2222222222222222222222222222222222222222).
FROM stackbuild/stage/toolkit:97ee31c901bf5d15fc198061f21c37a7d767f9e520b14f0e32bc3a2fe2ae4d68
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=stackbuild/stage/devkit:eb20564a1aaab80a32ae3e9ab6d4fbdbbc3ef28ce9f28f1cbf96180be5f4424a ["/opt/stack/devkit", "/opt/stack/devkit"]
ENV DEVKIT_HOME="/opt/stack/devkit" \
    PATH="/opt/stack/kernels/output/bin:${PATH}"
COPY ["src/", "/opt/stack/kernels/"]
WORKDIR /opt/stack/kernels
# The build steps and artifact checks are scripts in the build context (steps/), never
# Dockerfile text: whatever they hold, they cannot add an instruction here.
COPY ["steps/", "/opt/stackbuild/steps/kernels/"]
RUN ["/bin/bash", "/opt/stackbuild/steps/kernels/build.sh"]
