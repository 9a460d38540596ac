# stackbuild: parent stages (each build argument names the parent's image).
ARG BASE_RUNTIME_IMAGE=stackbuild/stage/base-runtime:3adee7b07e74dcbe6cb213c08ef2afc86f95660528a28f01ac56d8dfc5863252
ARG BASE_DEVEL_IMAGE=stackbuild/stage/base-devel:695a84c15c015f6e1ba6d5dc3a9ee656195123936821cd3842ef579b9c5d2cda
ARG TILELANG_ASCEND_IMAGE=stackbuild/stage/tilelang-ascend:3fcc1f3ef015ddea55aaaf2d1543081344391d29d118355fc776bdc694d07140
ARG CATLASS_IMAGE=stackbuild/stage/catlass:d3d62810186eb3aba422e442b1cc06133c044e83e8ea984dd4dbfc5b8f80c721
FROM ${BASE_RUNTIME_IMAGE} AS base-runtime
FROM ${BASE_DEVEL_IMAGE} AS base-devel
FROM ${TILELANG_ASCEND_IMAGE} AS tilelang-ascend
FROM ${CATLASS_IMAGE} AS catlass
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
COPY --from=catlass ["/opt/stack/catlass/output/bin/00_basic_matmul", "/opt/stack/catlass/output/bin/00_basic_matmul"]
WORKDIR /opt/stack
COPY ["stack.lock.json", "/etc/stackbuild/stack.lock.json"]
LABEL org.opencontainers.image.title="8.5.0 runtime image" \
      org.opencontainers.image.version="8.5.0-910b-ubuntu22.04-py3.10-runtime" \
      org.opencontainers.image.created="2024-01-01T00:00:00Z" \
      org.stackbuild.lock.sha256="a4039cfa2d6785e2fcb1c43fbc7eab9b1f587a2dba11029d2f74a7ba6c6232e3" \
      org.stackbuild.toolkit.version="8.5.0" \
      org.stackbuild.arch="x86_64" \
      org.stackbuild.host.driver="25.5.0" \
      org.stackbuild.smoke.command="/opt/stack/catlass/output/bin/00_basic_matmul 256 512 1024 0" \
      org.stackbuild.smoke.expect="Compare success." \
      org.stackbuild.smoke.needs-device="true" \
      org.stackbuild.component.catlass="https://github.com/hicann/catlass.git@0c1b33a001cfaacefd1de2a1a94bfe540747c538"
