# stackbuild: devel image, the whole stack on the toolkit.
FROM stackbuild/stage/toolkit:a89d04186f1b648074fcbf6e4876ef51b8821379ca79d4b4849396e9e7f03378
COPY --from=stackbuild/stage/devkit:c4732fa4aa9d7b89816aefe0a0f2e7b5c1b23cb2a8aa8f40d7b13f80ca8dfb6a /opt/stack/devkit /opt/stack/devkit
COPY --from=stackbuild/stage/kernels:29994d1dacdaca26022d5a48a100202cb7316699f7d64d65b02c1ee1b8670fc1 /opt/stack/kernels /opt/stack/kernels
ENV DEVKIT_HOME="/opt/stack/devkit"
ENV PATH="/opt/stack/kernels/output/bin:${PATH}"
WORKDIR /opt/stack
