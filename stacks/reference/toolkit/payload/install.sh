#!/bin/bash
# Installer of the CPU-simulated CANN toolkit. Flags and layout follow CANN's toolkit
# .run (see shared/ascend-facts.md): --install/--full, --quiet, --install-path=DIR,
# --install-for-all, --force, --version. The layout is the one the package's version
# installs: up to 8.3, <path>/ascend-toolkit/<ver>/ with a `latest` symlink and
# ascend-toolkit/set_env.sh; from 8.5.0, <path>/cann-<ver>/ with a `cann` link, cann/set_env.sh
# and the old ascend-toolkit/set_env.sh kept for scripts that source it. Both have
# <arch>-linux/ascend_toolkit_install.info and opp/version.info with version_dir=.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=/dev/null
. "$here/package.info"

log() { echo "[Toolkit] [$1] ${*:2}"; }
die() { log ERROR "$*" >&2; exit 1; }

usage() {
    cat <<USAGE
Usage: ./${PACKAGE_NAME}_${VERSION}_linux-${ARCH}.run [options]
CPU simulation of the CANN toolkit ${VERSION} (stackbuild reference stack; not Huawei CANN).
  --install, --full        install the toolkit (full install)
  --quiet                  accept the license and do not prompt
  --install-path=DIR       install under DIR (default /usr/local/Ascend as root, \$HOME/Ascend otherwise)
  --install-for-all        make the installation readable and usable by all users
  --force                  replace an existing installation of the same version
  --version                print the package version and exit
  --help                   print this help and exit
USAGE
}

mode="" quiet=0 path="" for_all=0 force=0
for arg in "$@"; do
    case "$arg" in
        --install|--full) mode=install ;;
        --quiet) quiet=1 ;;
        --install-path=*) path=${arg#--install-path=} ;;
        --install-for-all) for_all=1 ;;
        --force) force=1 ;;
        --version) echo "$VERSION"; exit 0 ;;
        --help|-h) usage; exit 0 ;;
        *) usage >&2; die "unknown option: $arg" ;;
    esac
done
[ -n "$mode" ] || { usage >&2; die "nothing to do: pass --install or --full"; }

machine=$(uname -m)
[ "$machine" = "$ARCH" ] || die "this package is for $ARCH but this machine is $machine"

if [ "$quiet" = 0 ]; then
    echo "The ${PACKAGE_NAME} license: an open CPU simulation for testing; no warranty."
    printf 'Do you accept the EULA to install %s? [y/n] ' "$PACKAGE_NAME"
    answer=""
    read -r answer || true
    case "$answer" in
        y|Y|yes) ;;
        *) die "installation aborted: license not accepted (pass --quiet to accept non-interactively)" ;;
    esac
fi

if [ -z "$path" ]; then
    if [ "$(id -u)" = 0 ]; then path=/usr/local/Ascend; else path=$HOME/Ascend; fi
fi
case "$path" in /*) ;; *) die "--install-path must be absolute: $path" ;; esac

# 8.5.0 is the first release with the new layout (ascend-deployer's install_cann.py).
major=${VERSION%%.*} rest=${VERSION#*.} minor=${rest%%.*}
if [ "$major" -gt 8 ] || { [ "$major" = 8 ] && [ "$minor" -ge 5 ]; }; then
    root=$path dest=$path/cann-$VERSION home=$path/cann link_target=cann-$VERSION set_env=$path/cann/set_env.sh
else
    root=$path/ascend-toolkit dest=$root/$VERSION home=$root/latest link_target=$VERSION set_env=$root/set_env.sh
fi
if [ -e "$dest" ]; then
    [ "$force" = 1 ] || die "version $VERSION is already installed in $dest (pass --force to replace it)"
    rm -rf "$dest"
fi

cc=${CC:-cc}
command -v "$cc" >/dev/null || die "no C compiler ($cc) found: the CPU device library is built at install time"

log INFO "installing ${PACKAGE_NAME} ${VERSION} into $dest"
mkdir -p "$root"
staging=$(mktemp -d "$root/.staging.XXXXXX")
trap 'rm -rf "$staging"' EXIT
mkdir -p "$staging/bin" "$staging/lib64" "$staging/$ARCH-linux" "$staging/opp"
cp -R "$here/include" "$staging/include"
cp "$here/bin/ascendcc" "$staging/bin/ascendcc"
chmod 755 "$staging/bin/ascendcc"
echo "$VERSION" > "$staging/bin/.toolkit_version"
"$cc" -O2 -fPIC -shared -pthread -Wall -Werror -I"$staging/include" \
    -Wl,-soname,libascendcl.so "$here/src/acl.c" -o "$staging/lib64/libascendcl.so" \
    || die "building libascendcl.so failed"

cat > "$staging/$ARCH-linux/ascend_toolkit_install.info" <<INFO
package_name=${PACKAGE_NAME}
version=${VERSION}
innerversion=${INNER_VERSION}
arch=${ARCH}
os=linux
path=${dest}
INFO
cat > "$staging/opp/version.info" <<INFO
Version=${INNER_VERSION}
version_dir=${VERSION}
INFO

write_set_env() {
    cat > "$1" <<ENV
# Environment of the CPU-simulated CANN toolkit (same variables as CANN's set_env.sh).
export ASCEND_TOOLKIT_HOME=${home}
export ASCEND_HOME_PATH=\${ASCEND_TOOLKIT_HOME}
export ASCEND_OPP_PATH=\${ASCEND_TOOLKIT_HOME}/opp
export ASCEND_AICPU_PATH=\${ASCEND_TOOLKIT_HOME}
export LD_LIBRARY_PATH=\${ASCEND_TOOLKIT_HOME}/lib64\${LD_LIBRARY_PATH:+:\${LD_LIBRARY_PATH}}
export PATH=\${ASCEND_TOOLKIT_HOME}/bin\${PATH:+:\${PATH}}
export CMAKE_PREFIX_PATH=\${ASCEND_TOOLKIT_HOME}\${CMAKE_PREFIX_PATH:+:\${CMAKE_PREFIX_PATH}}
ENV
}

if [ "$home" = "$path/cann" ]; then
    write_set_env "$staging/set_env.sh"
    mkdir -p "$path/ascend-toolkit"
    write_set_env "$path/ascend-toolkit/set_env.sh"
fi
mv "$staging" "$dest"
trap - EXIT
ln -sfn "$link_target" "$home"
[ "$home" = "$path/cann" ] || write_set_env "$root/set_env.sh"

for installed in "$dest" "$path/ascend-toolkit"; do
    [ -e "$installed" ] || continue
    if [ "$for_all" = 1 ]; then chmod -R a+rX "$installed"; else chmod -R o-rwx "$installed"; fi
done
log INFO "${PACKAGE_NAME} ${VERSION} installed; run: source ${set_env}"
