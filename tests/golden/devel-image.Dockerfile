# stackbuild: devel image, the whole stack on the toolkit.
FROM stackbuild/stage/toolkit:1f8eb9319a43df499ab6d827871e9032229b52517774d507275a59df716b03f0
COPY --from=stackbuild/stage/devkit:e3227dc4ba72a42867fa40033c1842ec965ccf25e4dff3ae196918ab72cd1325 /opt/stack/devkit /opt/stack/devkit
COPY --from=stackbuild/stage/kernels:9cdf208153765cabfd8d221ce249dc82e89098e64b288595fd6ae420fcfd6298 /opt/stack/kernels /opt/stack/kernels
ENV DEVKIT_HOME="/opt/stack/devkit" \
    PATH="/opt/stack/kernels/output/bin:${PATH}"
WORKDIR /opt/stack
