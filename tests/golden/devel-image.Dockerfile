# stackbuild: devel image, the whole stack on the toolkit.
FROM stackbuild/stage/toolkit:50dca61c662ab1cbcaf4c1c67df7a47fe3efe48839714bb4544de54c535a84c0
COPY --from=stackbuild/stage/devkit:de61fe623bc3ceb07eabd60f2e5679ccda22108881de8e1da268a0a98a182728 ["/opt/stack/devkit", "/opt/stack/devkit"]
COPY --from=stackbuild/stage/kernels:bc4e1a7147471faf036b8f7ea4df0f916c24b84b72081f9c3a35eaff5cf55ce1 ["/opt/stack/kernels", "/opt/stack/kernels"]
ENV DEVKIT_HOME="/opt/stack/devkit" \
    PATH="/opt/stack/kernels/output/bin:${PATH}"
WORKDIR /opt/stack
