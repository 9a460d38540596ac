# stackbuild: component kernels (git master 2222222222222222222222222222222222222222).
FROM stackbuild/stage/toolkit:8cc7deaee421ce31db74b6f824957cdc831c348e059f451fa8a81be05adbd2c5
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=stackbuild/stage/devkit:5fc310f08ee40c77e4f77fcd3d1b592d35de6aefad011e9dccb22daf857c5ade /opt/stack/devkit /opt/stack/devkit
ENV DEVKIT_HOME="/opt/stack/devkit" \
    PATH="/opt/stack/kernels/output/bin:${PATH}"
COPY src/ /opt/stack/kernels/
WORKDIR /opt/stack/kernels
RUN bash scripts/build.sh 00_basic_matmul \
 && { test -e "output/bin/00_basic_matmul" || { echo "stackbuild: kernels did not produce the artifact output/bin/00_basic_matmul" >&2; exit 1; }; } \
 && { test -e "output/lib" || { echo "stackbuild: kernels did not produce the artifact output/lib" >&2; exit 1; }; }
