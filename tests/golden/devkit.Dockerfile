# stackbuild: component devkit (git master 1111111111111111111111111111111111111111).
FROM stackbuild/stage/toolkit:a89d04186f1b648074fcbf6e4876ef51b8821379ca79d4b4849396e9e7f03378
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEVKIT_HOME="/opt/stack/devkit"
COPY src/ /opt/stack/devkit/
WORKDIR /opt/stack/devkit
RUN bash build.sh --pkg
RUN test -e "output" || { echo "stackbuild: devkit did not produce the artifact output" >&2; exit 1; }
