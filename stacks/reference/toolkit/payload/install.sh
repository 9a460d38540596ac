#!/bin/bash
# Installer of the CPU-simulated CANN toolkit, and of its operator package (KIND=ops in
# package.info: its opp/ files into the toolkit of the same version). Flags and layout follow CANN's toolkit
# .run (see shared/ascend-facts.md, "The .run interface"): --install/--full/--devel, --upgrade,
# --uninstall, --quiet, --install-path=DIR, --install-for-all, --force, --version and, from 8.5.0,
# --whitelist=nnrt, passed on by the .run's header (header.sh). The layout is the one the package's
# version installs: up to 8.3, <path>/ascend-toolkit/<ver>/ with a `latest` symlink and
# ascend-toolkit/set_env.sh; from 8.5.0, <path>/cann-<ver>/ with the link chain and the records
# ascend-facts "Installed tree" describes (each written below names its source). Both have
# <arch>-linux/ascend_toolkit_install.info; the compiler is in tools/ccec_compiler/bin and the ACL
# CMake package in lib64/cmake.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=/dev/null
. "$here/package.info"

# CANN's installers log to /var/log/ascend_seclog/ (ascend_install.log, and operation.log for the
# operation's outcome) as root, $HOME/var/log/ascend_seclog/ otherwise, quiet or not (hicann/runtime
# scripts/package/runtime/scripts/install.sh, log_dir= and its logfile lines): so does this one.
if [ "$(id -u)" = 0 ]; then log_dir=/var/log/ascend_seclog; else log_dir=$HOME/var/log/ascend_seclog; fi
# The toolkit's own log is ascend_toolkit_install.log (ascend-deployer install_cann.py _retarget sets
# that name for the toolkit; ascend-facts "Installed tree"), a component's ascend_install.log
# (hicann/runtime v8.5.0 install.sh l.43).
if [ "${KIND:-toolkit}" = toolkit ]; then log_name=ascend_toolkit_install.log; else log_name=ascend_install.log; fi
mkdir -p "$log_dir"
log() { echo "[Toolkit] [$1] ${*:2}"; echo "[Toolkit] [$(date '+%Y-%m-%d %H:%M:%S')] [$1] ${*:2}" >> "$log_dir/$log_name"; }
die() { log ERROR "$*" >&2; exit 1; }

# The patched makeself header (header.sh) prepends `--<the .run>` and `--<working directory>`;
# CANN's component installers strip them the same way (hicann/runtime install.sh l.943-962).
case "${1:-}" in --*.run) shift 2 ;; esac
mode="" quiet=0 path="" for_all=0 force=0 whitelist="" install_type=full
for arg in "$@"; do
    case "$arg" in
        --install|--full) mode=install ;;
        --devel) mode=install install_type=devel ;;
        --upgrade) mode=install force=1 ;;  # the same version replaced: this package has no other to upgrade from
        --uninstall) mode=uninstall ;;
        --whitelist=nnrt) whitelist=nnrt ;;
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
    home_dir=$dest new_layout=1
else
    root=$path/ascend-toolkit dest=$root/$VERSION home=$root/latest link_target=$VERSION set_env=$root/set_env.sh
    home_dir=$home new_layout=0
fi
if [ -n "$whitelist" ]; then
    # Only the 8.5.0+ toolkit takes it (ascend-deployer install_cann.py l.485-516); before 8.5 the
    # runtime is its own package (its CANN_8.3.RC1.json lists Ascend-cann-nnrt_8.3.RC1_linux-<arch>.zip).
    [ "${KIND:-toolkit}" = toolkit ] || die "--whitelist=: only the toolkit package has parts to choose from"
    [ "$new_layout" = 1 ] || die "--whitelist=nnrt: CANN ${VERSION} ships the runtime as its own nnrt package"
    install_type=run
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
    [ "$new_layout" = 0 ] || rm -f "$path/ascend-toolkit/latest" "$path/ascend-toolkit/set_env.sh"
    [ "$new_layout" = 0 ] || [ "$(id -u)" != 0 ] || rm -f /etc/Ascend/ascend_cann_install.info
    [ "$new_layout" = 1 ] || rm -f "$set_env"
    log INFO "${PACKAGE_NAME} ${VERSION} uninstalled from $path"
    exit 0
fi
if [ -e "$dest" ]; then
    [ "$force" = 1 ] || die "version $VERSION is already installed in $dest (pass --force to replace it)"
    rm -rf "$dest"
fi

cc=${CC:-cc}
command -v "$cc" >/dev/null || die "no C compiler ($cc) found: the CPU device library is built at install time"

log INFO "installing ${PACKAGE_NAME} ${VERSION} into $dest${whitelist:+ (only: $whitelist)}"
mkdir -p "$root"
staging=$(mktemp -d "$root/.staging.XXXXXX")
trap 'rm -rf "$staging"' EXIT
mkdir -p "$staging/lib64" "$staging/devlib" "$staging/$ARCH-linux"
# devlib/ holds the driver HAL's stand-in that libascendcl.so links against (CANN's devlib/ has the
# driver's development libraries); a host's driver provides the real one at run time.
"$cc" -O2 -fPIC -shared -Wall -Werror -Wl,-soname,libascend_hal.so "$here/src/hal_stub.c" \
    -o "$staging/devlib/libascend_hal.so" || die "building devlib/libascend_hal.so failed"
"$cc" -O2 -fPIC -shared -pthread -Wall -Werror -I"$here/include" -Wl,-soname,libascendcl.so \
    "$here/src/acl.c" -o "$staging/lib64/libascendcl.so" -L"$staging/devlib" -lascend_hal \
    || die "building libascendcl.so failed"
cp -R "$here/opp" "$staging/opp"
if [ "$whitelist" != nnrt ]; then
    # What a runtime-only install leaves out: the compiler, headers and CMake packages (ascend-deployer
    # reports the toolkit "not installed" under whitelist=nnrt, process_test.py l.395-414).
    mkdir -p "$staging/bin" "$staging/lib64/cmake"
    cp -R "$here/include" "$staging/include"
    cp -R "$here/tools" "$staging/tools"
    cp "$here/cmake/ACLConfig.cmake" "$staging/lib64/cmake/"
    echo "$VERSION" > "$staging/bin/.toolkit_version"
fi
bash "$here/asc-devkit/install.sh" "$staging" ${whitelist:+--library-only} \
    || die "building the Ascend C devkit (ascendc/, lib64/libascendc.so) failed"

# The toolkit-level record ascend-deployer detects an installed toolkit by (install_cann.py l.150-156,
# l.211-212; fields as ascend-facts "Version files" shows them).
cat > "$staging/$ARCH-linux/ascend_toolkit_install.info" <<INFO
package_name=${PACKAGE_NAME}
version=${VERSION}
innerversion=${INNER_VERSION}
arch=${ARCH}
os=linux
path=${dest}
INFO
if [ "$new_layout" = 1 ]; then
    # The install parameters ascend-deployer reads back, whitelist= (cann_checks.py l.119-134,
    # process_test.py l.424-436: the first /usr/local/Ascend/cann/*/install.conf; "no" when none).
    echo "whitelist=${whitelist:-no}" > "$staging/$ARCH-linux/install.conf"
    # Per-package records, as hicann/runtime v8.5.0 install.sh writes its own (l.94-95 modes 640/440,
    # l.559-631 keys and order, l.1143-1176 share/info/<package>/; runtime_func.sh l.59 the arch path),
    # version.info as that tag's root version.info plus the build's timestamp= (update_version_info.sh
    # l.28-44). The directory field says `cann` whatever the release: nothing may key on it.
    # asc-devkit's the same way, with its own key prefix (hicann/asc-devkit v8.5.0
    # scripts/package/scripts/install.sh l.578, l.635, l.1160): only where its devkit is installed whole.
    parts="runtime:Runtime"
    [ "$whitelist" = nnrt ] || parts="$parts asc-devkit:Asc-Devkit"
    for part in $parts; do
        info=$staging/share/info/${part%%:*} key=${part#*:}
        mkdir -p "$info"
        printf 'Version=%s\nversion_dir=cann\ntimestamp=%s\n' "$VERSION" "$TIMESTAMP" > "$info/version.info"
        {
            echo "${key}_Install_Type=$install_type"
            echo "${key}_Chip_Type=all"
            echo "${key}_Feature_Type=all"
            echo "${key}_UserName=$(id -un)"
            echo "${key}_UserGroup=$(id -gn)"
            echo "${key}_Install_Path_Param=$path"
            echo "${key}_Arch_Linux_Path=$ARCH-linux"
            echo "${key}_Hetero_Arch_Flag=n"
        } > "$info/ascend_install.info"
    done
fi

# set_env.sh is told where the toolkit is at install time, as CANN's installer does (hicann/runtime
# scripts/package/runtime/scripts/runtime_custom_install.sh rewrites its version_dirpath= line): 8.5.0
# and later keep it in cann-<ver>/, older releases in ascend-toolkit/, naming the `latest` link.
if [ "$new_layout" = 1 ]; then set_env_file=$dest/set_env.sh; else set_env_file=$root/set_env.sh; fi
sed "s#^\( *local toolkit_dir=\).*#\1\"$home_dir\"#" "$here/set_env.sh" > "$staging/set_env.sh"
mv "$staging" "$dest"
[ "$set_env_file" = "$dest/set_env.sh" ] || mv "$dest/set_env.sh" "$set_env_file"
trap - EXIT
ln -sfn "$link_target" "$home"
if [ "$new_layout" = 1 ]; then
    # The old entry points stay for scripts that source them (the official 8.5.0 image does), through
    # the `cann` link (ascend-facts "Installed tree": inferred as the usual chain; what stackbuild reads
    # goes through <path>/cann, as ascend-deployer does).
    mkdir -p "$path/ascend-toolkit"
    ln -sfn ../cann "$path/ascend-toolkit/latest"
    ln -sfn latest/set_env.sh "$path/ascend-toolkit/set_env.sh"
fi

# Modes as CANN's installer sets them (owner and group only); --install-for-all gives others the
# group's bits without write (hicann/runtime common_func_v2.inc, get_install_for_all_mod).
find "$dest" -type d -exec chmod 750 {} +
find "$dest" -type f -exec chmod 440 {} +
find "$dest" -type f \( -path '*/bin/*' -o -name '*.so' \) -exec chmod 550 {} +
chmod 440 "$set_env_file"
if [ "$new_layout" = 1 ]; then
    chmod 550 "$dest"/share/info/*
    chmod 640 "$dest"/share/info/*/ascend_install.info "$dest/$ARCH-linux/install.conf"
fi
if [ "$for_all" = 1 ]; then
    chmod -R o=g,o-w "$dest" "$set_env_file"
fi
if [ "$new_layout" = 1 ] && [ "$(id -u)" = 0 ]; then
    # The machine's record of the CANN install (ascend-facts "Installed tree": read by sgl-kernel-npu's
    # build.sh; these two fields are all that is known of it). /etc/ascend_install.info is the driver's.
    mkdir -p /etc/Ascend
    printf 'Install_Path=%s\nToolkit_InstallPath=%s\n' "$path" "$dest" > /etc/Ascend/ascend_cann_install.info
    chmod 644 /etc/Ascend/ascend_cann_install.info
fi
log INFO "${PACKAGE_NAME} ${VERSION} installed; run: source ${set_env}"
echo "[$(date '+%Y-%m-%d %H:%M:%S')] $(id -un) Install ${PACKAGE_NAME} ${VERSION} success" >> "$log_dir/operation.log"
