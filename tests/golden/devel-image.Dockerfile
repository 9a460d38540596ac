# stackbuild: devel image, the whole stack on the toolkit.
FROM stackbuild/stage/toolkit:da3deacc4ce288dc5293cc9860743baaf48f6767ad953180ef21d689b89438df
COPY --from=stackbuild/stage/devkit:d6779229725c77644a1caf0e4e9eb79bc122fbaaab1bdb0428fdb02c201bd67c ["/opt/stack/devkit", "/opt/stack/devkit"]
COPY --from=stackbuild/stage/kernels:fa44f8e621caa70e214ecaf42ac4eaa2083c1e60f932e935332d7df6e6567a88 ["/opt/stack/kernels", "/opt/stack/kernels"]
ENV DEVKIT_HOME="/opt/stack/devkit" \
    PATH="/opt/stack/kernels/output/bin:${PATH}"
WORKDIR /opt/stack
