# stackbuild: devel image, the whole stack on the toolkit.
FROM stackbuild/stage/toolkit:97ee31c901bf5d15fc198061f21c37a7d767f9e520b14f0e32bc3a2fe2ae4d68
COPY --from=stackbuild/stage/devkit:50dff960115fbba81761d5b359cef4ef7f0f5111b799cb08aff58c88b7a19821 ["/opt/stack/devkit", "/opt/stack/devkit"]
COPY --from=stackbuild/stage/kernels:d9b7a354a845ccdbca51b201466231da50d9ec04a7d0ed21a27da5537402cf45 ["/opt/stack/kernels", "/opt/stack/kernels"]
ENV DEVKIT_HOME="/opt/stack/devkit" \
    PATH="/opt/stack/kernels/output/bin:${PATH}"
WORKDIR /opt/stack
