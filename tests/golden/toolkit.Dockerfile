# stackbuild: parent stages (each build argument names the parent's image).
ARG BASE_DEVEL_IMAGE=stackbuild/stage/base-devel:c98d76030ab5b83e5a50b611a129db1dc31d4d2b1b6b2f1a2e879bacbbfc635a
FROM ${BASE_DEVEL_IMAGE} AS base-devel
# stackbuild: toolkit stage. Installs the pinned packages with CANN's flags and checks that the
# installed version files report the pinned version. Its ENV is what the installed set_env.sh
# scripts set, read once they are installed and baked in by a second build (see env.Dockerfile.j2);
# the set-env probe checks the two agree.
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
RUN source /usr/local/Ascend/cann/set_env.sh \
 && info="${ASCEND_TOOLKIT_HOME}/$(uname -m)-linux/ascend_toolkit_install.info" \
 && found=$(sed -n 's/^version=//p' "$info") \
 && if [ "$found" != "8.5.0" ]; then echo "stackbuild: toolkit version mismatch: the lock pins 8.5.0 but the installed package reports '${found}' ($info)" >&2; exit 1; fi \
 && found=$(sed -n 's/^version_dir=//p' "${ASCEND_TOOLKIT_HOME}/opp/version.info") \
 && if [ "$found" != "8.5.0" ]; then echo "stackbuild: toolkit version mismatch: the lock pins 8.5.0 but opp/version.info has version_dir='${found}'" >&2; exit 1; fi \
 && rm -rf /tmp/stackbuild-packages
