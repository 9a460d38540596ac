# stackbuild: component kernels (git master 2222222222222222222222222222222222222222).
FROM stackbuild/stage/toolkit:1f8eb9319a43df499ab6d827871e9032229b52517774d507275a59df716b03f0
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=stackbuild/stage/devkit:e3227dc4ba72a42867fa40033c1842ec965ccf25e4dff3ae196918ab72cd1325 /opt/stack/devkit /opt/stack/devkit
ENV DEVKIT_HOME="/opt/stack/devkit" \
    PATH="/opt/stack/kernels/output/bin:${PATH}"
COPY src/ /opt/stack/kernels/
WORKDIR /opt/stack/kernels
RUN bash scripts/build.sh 00_basic_matmul \
 && { test -e "output/bin/00_basic_matmul" || { echo "stackbuild: kernels did not produce the artifact output/bin/00_basic_matmul" >&2; exit 1; }; } \
 && { test -e "output/lib" || { echo "stackbuild: kernels did not produce the artifact output/lib" >&2; exit 1; }; }
