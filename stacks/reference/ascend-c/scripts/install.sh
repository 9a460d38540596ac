#!/bin/bash
# The installer inside cpusim-asc-devkit_<ver>_linux-<arch>.run (`make package` packs it with
# makeself, as asc-devkit's `bash build.sh --pkg` does): `--full --install-path=<toolkit>`
# installs the devkit into the CANN tree, under <toolkit>/ascendc (lib64/, include/), for its owner
# and group only unless --install-for-all (as CANN's installers: others get the group's bits
# without write).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "[asc-devkit] [ERROR] $*" >&2; exit 1; }
mode="" path="" for_all=0
for arg in "$@"; do
    case "$arg" in
        --full|--install) mode=install ;;
        --install-for-all) for_all=1 ;;
        --install-path=*) path=${arg#--install-path=} ;;
        *) die "unknown option: $arg" ;;
    esac
done
[ -n "$mode" ] || die "nothing to do: pass --full"
[ -n "$path" ] || die "--install-path= is required: the CANN toolkit directory (\$ASCEND_TOOLKIT_HOME)"
[ -f "$path/$(uname -m)-linux/ascend_toolkit_install.info" ] || die "no CANN toolkit at $path"
dest=$path/ascendc
rm -rf "$dest"
mkdir -p "$dest"
cp -R "$here/lib64" "$here/include" "$dest/"
if [ "$for_all" = 1 ]; then chmod -R o=g,o-w "$dest"; else chmod -R o-rwx "$dest"; fi
echo "[asc-devkit] [INFO] installed into $dest"
