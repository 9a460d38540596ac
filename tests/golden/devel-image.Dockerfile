# stackbuild: devel image, the whole stack on the toolkit.
FROM stackbuild/stage/toolkit:1f8eb9319a43df499ab6d827871e9032229b52517774d507275a59df716b03f0
COPY --from=stackbuild/stage/devkit:1e7ccfd16a06562073d4882b1f2efe786fe686d26ce70697f48c74c5405cb1d9 ["/opt/stack/devkit", "/opt/stack/devkit"]
COPY --from=stackbuild/stage/kernels:a82034682bd14e065317c097c92ce4020d3d45b5a1e35ff67358bc3f8240727e ["/opt/stack/kernels", "/opt/stack/kernels"]
ENV DEVKIT_HOME="/opt/stack/devkit" \
    PATH="/opt/stack/kernels/output/bin:${PATH}"
WORKDIR /opt/stack
