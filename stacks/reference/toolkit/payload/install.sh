#!/bin/bash
# Installer of the CPU-simulated CANN toolkit, and of its operator package (KIND=ops in
# package.info: its opp/ files into the toolkit of the same version). Flags and layout follow CANN's toolkit
# .run (see shared/ascend-facts.md, "The .run interface"): --install/--full/--devel, --upgrade,
# --uninstall, --quiet, --install-path=DIR, --install-for-all, --force, --version, passed on by
# the .run's header (header.sh). The layout is the one the package's version
# installs: up to 8.3, <path>/ascend-toolkit/<ver>/ with a `latest` symlink and
# ascend-toolkit/set_env.sh; from 8.5.0, <path>/cann-<ver>/ with a `cann` link, cann-<ver>/set_env.sh
# and the old ascend-toolkit/set_env.sh and ascend-toolkit/latest kept for scripts that use them.
# Both have <arch>-linux/ascend_toolkit_install.info and opp/version.info with version_dir=; the
# compiler is in tools/ccec_compiler/bin and the ACL CMake package in lib64/cmake.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=/dev/null
. "$here/package.info"

# CANN's installers log to /var/log/ascend_seclog/ (ascend_install.log, and operation.log for the
# operation's outcome) as root, $HOME/var/log/ascend_seclog/ otherwise, quiet or not (hicann/runtime
# scripts/package/runtime/scripts/install.sh, log_dir= and its logfile lines): so does this one.
if [ "$(id -u)" = 0 ]; then log_dir=/var/log/ascend_seclog; else log_dir=$HOME/var/log/ascend_seclog; fi
mkdir -p "$log_dir"
log() { echo "[Toolkit] [$1] ${*:2}"; echo "[Toolkit] [$(date '+%Y-%m-%d %H:%M:%S')] [$1] ${*:2}" >> "$log_dir/ascend_install.log"; }
die() { log ERROR "$*" >&2; exit 1; }

# The patched makeself header (header.sh) prepends `--<the .run>` and `--<working directory>`;
# CANN's component installers strip them the same way (hicann/runtime install.sh l.943-962).
case "${1:-}" in --*.run) shift 2 ;; esac
mode="" quiet=0 path="" for_all=0 force=0
for arg in "$@"; do
    case "$arg" in
        --install|--full|--devel) mode=install ;;
        --upgrade) mode=install force=1 ;;  # the same version replaced: this package has no other to upgrade from
        --uninstall) mode=uninstall ;;
        --whitelist=nnrt) die "--whitelist=nnrt: a runtime-only install is not simulated by this package yet" ;;
        --whitelist=*) die "${arg}: the parts this package has: nnrt" ;;
        --quiet|-q) quiet=1 ;;
        --install-path=*) path=${arg#--install-path=} ;;
        --install-for-all) for_all=1 ;;
        --force) force=1 ;;
        --version) echo "$VERSION"; exit 0 ;;
        *) die "unknown option: $arg (see --help)" ;;
    esac
done
[ -n "$mode" ] || die "nothing to do: pass --install, --full, --devel, --upgrade or --uninstall (see --help)"

machine=$(uname -m)
[ "$machine" = "$ARCH" ] || die "this package is for $ARCH but this machine is $machine"

if [ "$quiet" = 0 ] && [ "$mode" = install ]; then
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
    home_dir=$dest
else
    root=$path/ascend-toolkit dest=$root/$VERSION home=$root/latest link_target=$VERSION set_env=$root/set_env.sh
    home_dir=$home
fi
if [ "${KIND:-toolkit}" = ops ]; then
    # The operator package installs into the toolkit of its version, never without one (ascend-deployer
    # install_cann.py: _check_cann_version looks for cann-<ver>/*/ascend_toolkit_install.info and
    # install_kernels refuses "Please install the new toolkit first").
    info="$dest/$ARCH-linux/ascend_toolkit_install.info"
    [ -f "$info" ] && grep -qx "version=$VERSION" "$info" \
        || die "install the toolkit $VERSION into $path first: the ops package installs into its tree ($dest)"
    if [ "$mode" = uninstall ]; then
        (cd "$here/opp" && find . -type f) | while read -r f; do rm -f "$dest/opp/$f"; done
        log INFO "${PACKAGE_NAME} ${VERSION} uninstalled from $dest"
        exit 0
    fi
    log INFO "installing ${PACKAGE_NAME} ${VERSION} into $dest"
    cp -R "$here/opp/." "$dest/opp/"
    # Modes on its own files only: the toolkit's files stay as the toolkit wrote them (and in its layer).
    (cd "$here/opp" && find . -mindepth 1 -type d) | while read -r d; do chmod 750 "$dest/opp/$d"; done
    (cd "$here/opp" && find . -type f) | while read -r f; do chmod 440 "$dest/opp/$f"; done
    if [ "$for_all" = 1 ]; then
        (cd "$here/opp" && find . -mindepth 1) | while read -r f; do chmod o=g,o-w "$dest/opp/$f"; done
    fi
    log INFO "${PACKAGE_NAME} ${VERSION} installed"
    echo "[$(date '+%Y-%m-%d %H:%M:%S')] $(id -un) Install ${PACKAGE_NAME} ${VERSION} success" >> "$log_dir/operation.log"
    exit 0
fi
if [ "$mode" = uninstall ]; then
    [ -e "$dest" ] || die "${PACKAGE_NAME} ${VERSION} is not installed in $path"
    rm -rf "$dest" "$home"
    [ "$home" != "$path/cann" ] || rm -f "$path/ascend-toolkit/latest" "$path/ascend-toolkit/set_env.sh"
    [ "$home" = "$path/cann" ] || rm -f "$set_env"
    log INFO "${PACKAGE_NAME} ${VERSION} uninstalled from $path"
    exit 0
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
mkdir -p "$staging/bin" "$staging/lib64/cmake" "$staging/devlib" "$staging/$ARCH-linux" "$staging/opp"
cp -R "$here/include" "$staging/include"
cp -R "$here/tools" "$staging/tools"
cp "$here/cmake/ACLConfig.cmake" "$staging/lib64/cmake/"
echo "$VERSION" > "$staging/bin/.toolkit_version"
# devlib/ holds the driver HAL's stand-in that libascendcl.so links against (CANN's devlib/ has the
# driver's development libraries); a host's driver provides the real one at run time.
"$cc" -O2 -fPIC -shared -Wall -Werror -Wl,-soname,libascend_hal.so "$here/src/hal_stub.c" \
    -o "$staging/devlib/libascend_hal.so" || die "building devlib/libascend_hal.so failed"
"$cc" -O2 -fPIC -shared -pthread -Wall -Werror -I"$staging/include" -Wl,-soname,libascendcl.so \
    "$here/src/acl.c" -o "$staging/lib64/libascendcl.so" -L"$staging/devlib" -lascend_hal \
    || die "building libascendcl.so failed"
bash "$here/asc-devkit/install.sh" "$staging" || die "building the Ascend C devkit (ascendc/, lib64/libascendc.so) failed"

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

# set_env.sh is told where the toolkit is at install time, as CANN's installer does (hicann/runtime
# scripts/package/runtime/scripts/runtime_custom_install.sh rewrites its version_dirpath= line): 8.5.0
# and later keep it in cann-<ver>/, older releases in ascend-toolkit/, naming the `latest` link.
if [ "$home" = "$path/cann" ]; then set_env_file=$dest/set_env.sh; else set_env_file=$root/set_env.sh; fi
sed "s#^\( *local toolkit_dir=\).*#\1\"$home_dir\"#" "$here/set_env.sh" > "$staging/set_env.sh"
mv "$staging" "$dest"
[ "$set_env_file" = "$dest/set_env.sh" ] || mv "$dest/set_env.sh" "$set_env_file"
trap - EXIT
ln -sfn "$link_target" "$home"
if [ "$home" = "$path/cann" ]; then
    # The old entry points stay for scripts that source them (the official 8.5.0 image does).
    mkdir -p "$path/ascend-toolkit"
    ln -sfn "../$link_target" "$path/ascend-toolkit/latest"
    ln -sfn "../$link_target/set_env.sh" "$path/ascend-toolkit/set_env.sh"
fi

# Modes as CANN's installer sets them (owner and group only); --install-for-all gives others the
# group's bits without write (hicann/runtime common_func_v2.inc, get_install_for_all_mod).
find "$dest" -type d -exec chmod 750 {} +
find "$dest" -type f -exec chmod 440 {} +
find "$dest" -type f \( -path '*/bin/*' -o -name '*.so' \) -exec chmod 550 {} +
chmod 440 "$set_env_file"
if [ "$for_all" = 1 ]; then
    chmod -R o=g,o-w "$dest" "$set_env_file"
fi
log INFO "${PACKAGE_NAME} ${VERSION} installed; run: source ${set_env}"
echo "[$(date '+%Y-%m-%d %H:%M:%S')] $(id -un) Install ${PACKAGE_NAME} ${VERSION} success" >> "$log_dir/operation.log"
