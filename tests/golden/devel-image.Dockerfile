# stackbuild: devel image, the whole stack on the toolkit.
FROM stackbuild/stage/toolkit:97ee31c901bf5d15fc198061f21c37a7d767f9e520b14f0e32bc3a2fe2ae4d68
COPY --from=stackbuild/stage/devkit:eb20564a1aaab80a32ae3e9ab6d4fbdbbc3ef28ce9f28f1cbf96180be5f4424a ["/opt/stack/devkit", "/opt/stack/devkit"]
COPY --from=stackbuild/stage/kernels:8c417856cdf9b978377b414551648fe70575a0fb7035f5466d40c0ba88fda075 ["/opt/stack/kernels", "/opt/stack/kernels"]
ENV DEVKIT_HOME="/opt/stack/devkit" \
    PATH="/opt/stack/kernels/output/bin:${PATH}"
WORKDIR /opt/stack
