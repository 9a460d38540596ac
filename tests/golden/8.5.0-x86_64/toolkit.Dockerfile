# stackbuild: parent stages (each build argument names the parent's image).
ARG BASE_DEVEL_IMAGE=stackbuild/stage/base-devel:695a84c15c015f6e1ba6d5dc3a9ee656195123936821cd3842ef579b9c5d2cda
FROM ${BASE_DEVEL_IMAGE} AS base-devel
# stackbuild: toolkit stage. Installs the pinned packages with CANN's flags and checks that the
# installed version files report the pinned version. Its ENV is what the installed set_env.sh
# scripts set, read once they are installed and added to its config (env.Dockerfile.j2, applied by
# the engine); the set-env probe checks the two agree.
FROM base-devel
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# The installers are bind-mounted from the build context for the step that runs each one (read
# only), so no layer of this image holds them: a signed catalog zip was verified and unwrapped on
# the host, and only its .run is in the context. RUN --mount needs BuildKit: the classic builder
# cannot build this stage. They are mounted on /mnt, which the base has, so the engine makes no
# mount point in the layer. Each step ends removing the logs it wrote under /var/log (CANN's
# installers log to /var/log/ascend_seclog; normalising leaves /var/log's *.log files out of every
# layer anyway) and dating what it changed (ctime from 0.1 s before it began: the kernel dates
# files by a clock up to a tick behind `date`) to the lock's source date, so its layer - the
# toolkit's gigabytes - is canonical as the engine wrote it and normalising neither rewrites nor
# loads it again.
RUN --mount=type=bind,source=packages,target=/mnt \
    started=$(( $(date +%s%N) - 100000000 )) \
 && bash /mnt/Ascend-cann-toolkit_8.5.0_linux-x86_64.run --install --quiet --install-for-all \
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
# The compilers component builds call by name, through the compile cache when a build mounts it
# (builder/plan/compile_cache.py): the same files whether it does or not. Copied from a mount and
# dated as the installers' steps date what they change, so this layer too is canonical as built.
RUN --mount=type=bind,source=compilers,target=/mnt \
    started=$(( $(date +%s%N) - 100000000 )) \
 && mkdir -p /opt/stackbuild/compilers && cp /mnt/* /opt/stackbuild/compilers/ \
 && find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /mnt -o -path /etc/hosts -o -path /etc/hostname \
      -o -path /etc/resolv.conf \) -prune -o -newerct "@${started::-9}.${started: -9}" -newermt "@1704067200" -print0 \
    | xargs -0r touch -h -d "@1704067200"
WORKDIR /
# The installed version as ascend-deployer finds an installed toolkit (library/install_cann.py l.150-156:
# <home>/*/ascend_toolkit_install.info, `cann/` from 8.5.0, `ascend-toolkit/latest/` before), read from
# the `version=` line CANN writes there; never the directory field of a package's version.info,
# which CANN sets to `cann` whatever the release (hicann/runtime version.info, ascend-facts "As shipped").
RUN set -- /usr/local/Ascend/cann/*/ascend_toolkit_install.info \
 && if [ $# != 1 ] || [ ! -f "$1" ]; then echo "stackbuild: toolkit: no single /usr/local/Ascend/cann/*/ascend_toolkit_install.info, as ascend-deployer finds an installed toolkit (found: $*)" >&2; exit 1; fi \
 && found=$(sed -n 's/^version=//p' "$1") \
 && if [ "$found" != "8.5.0" ]; then echo "stackbuild: toolkit version mismatch: the lock pins 8.5.0 but the installed package reports '${found}' ($1)" >&2; exit 1; fi
