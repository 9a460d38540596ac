# stackbuild: component devkit (git master 1111111111111111111111111111111111111111).
FROM stackbuild/stage/toolkit:8cc7deaee421ce31db74b6f824957cdc831c348e059f451fa8a81be05adbd2c5
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEVKIT_HOME="/opt/stack/devkit"
COPY src/ /opt/stack/devkit/
WORKDIR /opt/stack/devkit
RUN bash build.sh --pkg \
 && { test -e "output" || { echo "stackbuild: devkit did not produce the artifact output" >&2; exit 1; }; }
