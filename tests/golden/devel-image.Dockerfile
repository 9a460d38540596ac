# stackbuild: devel image, the whole stack on the toolkit.
FROM stackbuild/stage/toolkit:8cc7deaee421ce31db74b6f824957cdc831c348e059f451fa8a81be05adbd2c5
COPY --from=stackbuild/stage/devkit:5fc310f08ee40c77e4f77fcd3d1b592d35de6aefad011e9dccb22daf857c5ade /opt/stack/devkit /opt/stack/devkit
COPY --from=stackbuild/stage/kernels:4683f6af95e6541a3b991ad9968f93da79c6841427f04637bf74797c96f95856 /opt/stack/kernels /opt/stack/kernels
ENV DEVKIT_HOME="/opt/stack/devkit" \
    PATH="/opt/stack/kernels/output/bin:${PATH}"
WORKDIR /opt/stack
