# stackbuild: parent stages (each build argument names the parent's image).
ARG BASE_RUNTIME_IMAGE=stackbuild/stage/base-runtime:2505e4a5b1c5de946196f16c36c09fca4cb4385189ec24d0592b44c781cb6706
ARG BASE_DEVEL_IMAGE=stackbuild/stage/base-devel:f45baf2444809fa3b120242bd3ef67caf7c1350d91af0732680bd0fe985debaa
ARG DEVKIT_IMAGE=stackbuild/stage/devkit:d3d44aed4c42a717a4d90fc430030a92592a6d46832ea2e56519fe661cc3f8cd
ARG KERNELS_IMAGE=stackbuild/stage/kernels:6077faf3a025cea968f337509b013c28b4f1d3379164a3356cf911bf55c4185b
FROM ${BASE_RUNTIME_IMAGE} AS base-runtime
FROM ${BASE_DEVEL_IMAGE} AS base-devel
FROM ${DEVKIT_IMAGE} AS devkit
FROM ${KERNELS_IMAGE} AS kernels
# stackbuild: runtime image: CANN's runtime and the declared runtime artifacts on the smaller runtime
# base. Its ENV (what the toolkit's set_env.sh sets here, then the components' variables) and
# entrypoint are added once it is built (env.Dockerfile.j2).
# CANN's runtime subset as CANN defines it: from 8.5.0 the toolkit .run installed with
# --whitelist=nnrt, then the ops package (ascend-deployer library/install_cann.py l.485-516,
# install_kernels), on the devel base, which has what the installers need. Its tree and /etc/Ascend are
# copied whole, as the official images copy theirs (Ascend/cann-container-image
# cann/8.5.0-910b-ubuntu22.04-py3.10/Dockerfile l.143-168); /etc/Ascend made if the installers wrote
# nothing there, so the copy never depends on it. See toolkit.Dockerfile.j2 for the install steps.
FROM base-devel AS cann-runtime
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN --mount=type=bind,source=packages,target=/mnt \
    started=$(( $(date +%s%N) - 100000000 )) \
 && bash /mnt/Ascend-cann-toolkit_8.5.0_linux-x86_64.run --install --quiet --install-for-all --whitelist=nnrt \
 && find /var/log -xdev -type f -name '*.log' -newerct "@${started::-9}.${started: -9}" -delete \
 && find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /mnt -o -path /etc/hosts -o -path /etc/hostname \
      -o -path /etc/resolv.conf \) -prune -o -newerct "@${started::-9}.${started: -9}" -newermt "@1704067200" -print0 \
    | xargs -0r touch -h -d "@1704067200"
RUN --mount=type=bind,source=packages,target=/mnt \
    started=$(( $(date +%s%N) - 100000000 )) \
 && bash /mnt/Ascend-cann-910b-ops_8.5.0_linux-x86_64.run --install --quiet --install-for-all \
 && find /var/log -xdev -type f -name '*.log' -newerct "@${started::-9}.${started: -9}" -delete \
 && find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /mnt -o -path /etc/hosts -o -path /etc/hostname \
      -o -path /etc/resolv.conf \) -prune -o -newerct "@${started::-9}.${started: -9}" -newermt "@1704067200" -print0 \
    | xargs -0r touch -h -d "@1704067200"
RUN mkdir -p /etc/Ascend
FROM base-runtime
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=cann-runtime ["/usr/local/Ascend", "/usr/local/Ascend"]
COPY --from=cann-runtime ["/etc/Ascend", "/etc/Ascend"]
COPY --from=devkit ["/opt/stack/devkit/output", "/opt/stack/devkit/output"]
COPY --from=kernels ["/opt/stack/kernels/output/bin/00_basic_matmul", "/opt/stack/kernels/output/bin/00_basic_matmul"]
WORKDIR /opt/stack
COPY ["stack.lock.json", "/etc/stackbuild/stack.lock.json"]
LABEL org.opencontainers.image.title="golden runtime image" \
      org.opencontainers.image.version="8.5.0-910b-ubuntu22.04-py3.11-runtime" \
      org.opencontainers.image.created="2024-01-01T00:00:00Z" \
      org.stackbuild.lock.sha256="0a4b2bcd928beb40eea051170d977dc13165b855b6240ca8b6c6dd41ef9fd6e4" \
      org.stackbuild.toolkit.version="8.5.0" \
      org.stackbuild.arch="x86_64" \
      org.stackbuild.host.driver="25.5.0" \
      org.stackbuild.smoke.command="00_basic_matmul 256 512 1024 0" \
      org.stackbuild.smoke.expect="Compare success." \
      org.stackbuild.smoke.needs-device="true" \
      org.stackbuild.component.devkit="https://github.com/hicann/asc-devkit.git@1111111111111111111111111111111111111111" \
      org.stackbuild.component.kernels="https://github.com/hicann/catlass.git@2222222222222222222222222222222222222222"
