# stackbuild: parent stages (each build argument names the parent's image).
ARG BASE_DEVEL_IMAGE=stackbuild/stage/base-devel:f98a17e0d9eee55d307511f7075b087a297dbe5e8ad12a2fb0cd4a95587064ff
FROM ${BASE_DEVEL_IMAGE} AS base-devel
# stackbuild: toolkit stage. Installs the pinned packages with CANN's flags,
# bakes set_env.sh into ENV (nothing depends on a shell sourcing it; the set-env probe checks
# the two agree), and checks that the installed version files report the pinned version.
FROM base-devel
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY packages/ /tmp/stackbuild-packages/
WORKDIR /tmp/stackbuild-packages
RUN python3 -m zipfile -e Ascend-cann-toolkit_8.5.0_linux-x86_64.zip . && rm Ascend-cann-toolkit_8.5.0_linux-x86_64.zip \
 && chmod +x Ascend-cann-toolkit_8.5.0_linux-x86_64.run \
 && ./Ascend-cann-toolkit_8.5.0_linux-x86_64.run --full --quiet --install-for-all \
 && rm Ascend-cann-toolkit_8.5.0_linux-x86_64.run
RUN python3 -m zipfile -e Ascend-cann-910b-ops_8.5.0_linux-x86_64.zip . && rm Ascend-cann-910b-ops_8.5.0_linux-x86_64.zip \
 && chmod +x Ascend-cann-910b-ops_8.5.0_linux-x86_64.run \
 && ./Ascend-cann-910b-ops_8.5.0_linux-x86_64.run --install --quiet --install-for-all \
 && rm Ascend-cann-910b-ops_8.5.0_linux-x86_64.run
RUN chmod +x Ascend-cann-nnal_8.5.0_linux-x86_64.run \
 && source /usr/local/Ascend/cann/set_env.sh && ./Ascend-cann-nnal_8.5.0_linux-x86_64.run --install --quiet --install-for-all \
 && rm Ascend-cann-nnal_8.5.0_linux-x86_64.run
WORKDIR /
ENV ASCEND_TOOLKIT_HOME="/usr/local/Ascend/cann" \
    ASCEND_HOME_PATH="/usr/local/Ascend/cann" \
    ASCEND_OPP_PATH="/usr/local/Ascend/cann/opp" \
    ASCEND_AICPU_PATH="/usr/local/Ascend/cann" \
    LD_LIBRARY_PATH="/usr/local/Ascend/cann/lib64:/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64/common:/usr/local/Ascend/driver/lib64/driver" \
    PATH="/usr/local/Ascend/cann/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    CMAKE_PREFIX_PATH="/usr/local/Ascend/cann"
RUN info="${ASCEND_TOOLKIT_HOME}/$(uname -m)-linux/ascend_toolkit_install.info" \
 && found=$(sed -n 's/^version=//p' "$info") \
 && if [ "$found" != "8.5.0" ]; then echo "stackbuild: toolkit version mismatch: the lock pins 8.5.0 but the installed package reports '${found}' ($info)" >&2; exit 1; fi \
 && found=$(sed -n 's/^version_dir=//p' "${ASCEND_TOOLKIT_HOME}/opp/version.info") \
 && if [ "$found" != "8.5.0" ]; then echo "stackbuild: toolkit version mismatch: the lock pins 8.5.0 but opp/version.info has version_dir='${found}'" >&2; exit 1; fi \
 && rm -rf /tmp/stackbuild-packages
