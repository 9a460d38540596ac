# stackbuild: runtime image, the declared runtime artifacts and the toolkit's
# runtime libraries on the smaller runtime base.
FROM stackbuild/stage/base-runtime:59a7aca9375e89dae698095c0c0d5af84d5b77f4771e28b235c36b1d00b43815
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=stackbuild/stage/toolkit:50dca61c662ab1cbcaf4c1c67df7a47fe3efe48839714bb4544de54c535a84c0 ["/usr/local/Ascend/cann-8.5.0/lib64", "/usr/local/Ascend/cann-8.5.0/lib64"]
COPY --from=stackbuild/stage/toolkit:50dca61c662ab1cbcaf4c1c67df7a47fe3efe48839714bb4544de54c535a84c0 ["/usr/local/Ascend/cann-8.5.0/x86_64-linux", "/usr/local/Ascend/cann-8.5.0/x86_64-linux"]
COPY --from=stackbuild/stage/toolkit:50dca61c662ab1cbcaf4c1c67df7a47fe3efe48839714bb4544de54c535a84c0 ["/usr/local/Ascend/cann-8.5.0/opp/version.info", "/usr/local/Ascend/cann-8.5.0/opp/version.info"]
COPY --from=stackbuild/stage/toolkit:50dca61c662ab1cbcaf4c1c67df7a47fe3efe48839714bb4544de54c535a84c0 ["/usr/local/Ascend/cann-8.5.0/set_env.sh", "/usr/local/Ascend/cann-8.5.0/set_env.sh"]
RUN ln -sfn cann-8.5.0 /usr/local/Ascend/cann
COPY --from=stackbuild/stage/devkit:de61fe623bc3ceb07eabd60f2e5679ccda22108881de8e1da268a0a98a182728 ["/opt/stack/devkit/output", "/opt/stack/devkit/output"]
COPY --from=stackbuild/stage/kernels:bc4e1a7147471faf036b8f7ea4df0f916c24b84b72081f9c3a35eaff5cf55ce1 ["/opt/stack/kernels/output/bin/00_basic_matmul", "/opt/stack/kernels/output/bin/00_basic_matmul"]
ENV ASCEND_TOOLKIT_HOME="/usr/local/Ascend/cann" \
    ASCEND_HOME_PATH="/usr/local/Ascend/cann" \
    ASCEND_OPP_PATH="/usr/local/Ascend/cann/opp" \
    ASCEND_AICPU_PATH="/usr/local/Ascend/cann" \
    LD_LIBRARY_PATH="/usr/local/Ascend/cann/lib64:/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64/common:/usr/local/Ascend/driver/lib64/driver" \
    PATH="/usr/local/Ascend/cann/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    CMAKE_PREFIX_PATH="/usr/local/Ascend/cann" \
    DEVKIT_HOME="/opt/stack/devkit"
ENV PATH="/opt/stack/kernels/output/bin:${PATH}"
WORKDIR /opt/stack
