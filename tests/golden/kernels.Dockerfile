# stackbuild: component kernels (git master 2222222222222222222222222222222222222222).
FROM stackbuild/stage/toolkit:a89d04186f1b648074fcbf6e4876ef51b8821379ca79d4b4849396e9e7f03378
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=stackbuild/stage/devkit:c4732fa4aa9d7b89816aefe0a0f2e7b5c1b23cb2a8aa8f40d7b13f80ca8dfb6a /opt/stack/devkit /opt/stack/devkit
ENV DEVKIT_HOME="/opt/stack/devkit"
ENV PATH="/opt/stack/kernels/output/bin:${PATH}"
COPY src/ /opt/stack/kernels/
WORKDIR /opt/stack/kernels
RUN bash scripts/build.sh 00_basic_matmul
RUN test -e "output/bin/00_basic_matmul" || { echo "stackbuild: kernels did not produce the artifact output/bin/00_basic_matmul" >&2; exit 1; } \
 && test -e "output/lib" || { echo "stackbuild: kernels did not produce the artifact output/lib" >&2; exit 1; }
