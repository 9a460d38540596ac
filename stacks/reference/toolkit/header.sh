#!/bin/sh
# @PACKAGE@ @VERSION@ (@ARCH@): self-extracting installer of the CPU simulation of the
# CANN toolkit used by stackbuild's reference stack. This is NOT Huawei CANN.
# Same shape as CANN's makeself .run files: this header, then a gzip'd tarball. It behaves as
# the header of CANN's patched makeself 2.5.0-patch1 does (ascend-facts "The .run interface"):
# the options CANN documents for its toolkit .run are taken, the header's own (--help, --info,
# --list, --check, --noexec/--extract=, --tar, --nox11) done here and the others passed to the
# package's install.sh, behind the two arguments the patched header prepends (`--<this file>`
# and `--<working directory>`), which install.sh strips; any other option is refused with the
# help, exit 1, as makeself refuses it ("Unrecognized flag : ...").
payload_line=@PAYLOAD_LINE@
payload_sha256=@PAYLOAD_SHA256@
label="@PACKAGE@ @VERSION@ for @ARCH@ (CPU simulation, not Huawei CANN)"

help() {
    cat <<HELP
Usage: $0 [options]
$label
  --help | -h              print this help and exit
  --info                   print the package's details and exit
  --list                   list the package's files and exit
  --check                  check the package's integrity and exit
  --version                print the package version and exit
  --quiet | -q             accept the license and print less (with --install, --upgrade)
  --nox11                  do not open a terminal window
  --install                install the package
  --install-path=<path>    install under <path> (default /usr/local/Ascend as root, \$HOME/Ascend otherwise)
  --install-for-all        make the installation usable by all users
  --upgrade                upgrade an installation of this package
  --uninstall              remove the installation of this package
  --noexec --extract=<path>  extract the package to <path> without installing
  --tar <tar options>      run tar with these options on the package's contents
  --devel                  install the development files
  --full                   install the package completely
  --whitelist=<list>       install only the listed parts (nnrt: the runtime)
  --force                  replace an installation of the same version
HELP
}

payload() { tail -n +"$payload_line" "$0"; }

noexec=0 extract="" passed=""
while [ $# -gt 0 ]; do
    case "$1" in
        --help|-h) help; exit 0 ;;
        --info)
            echo "Identification: $label"
            echo "Script run after extraction: ./install.sh"
            echo "Compression: gzip"
            echo "Payload sha256: $payload_sha256"
            exit 0 ;;
        --list) payload | tar -tzf -; exit $? ;;
        --check)
            found=$(payload | sha256sum | cut -d' ' -f1)
            if [ "$found" = "$payload_sha256" ]; then echo "Verifying archive integrity...  All good."; exit 0; fi
            echo "Error in SHA256 checksums: $found is different from $payload_sha256" >&2
            exit 1 ;;
        --tar) shift; payload | tar "$@"; exit $? ;;
        --noexec) noexec=1 ;;
        --extract=*) extract=${1#--extract=} ;;
        --nox11) ;;
        --quiet|-q|--version|--install|--install-for-all|--upgrade|--uninstall|--devel|--full|--force) passed="$passed $1" ;;
        --install-path=*|--whitelist=*)
            case "$1" in *[!A-Za-z0-9_./=,:+-]*) echo "Unsafe characters in $1" >&2; exit 1 ;; esac
            passed="$passed $1" ;;
        *) help >&2; echo "Unrecognized flag : $1" >&2; exit 1 ;;
    esac
    shift
done

if [ "$noexec" = 1 ]; then
    [ -n "$extract" ] || { help >&2; echo "--noexec needs --extract=<path>" >&2; exit 1; }
    mkdir -p "$extract" && payload | tar -xzf - -C "$extract"
    exit $?
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cpusim-toolkit.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
if ! payload | tar -xzf - -C "$tmp" 2>/dev/null; then
    echo "[Toolkit] [ERROR] the package is corrupt or truncated: $0" >&2
    exit 1
fi
# shellcheck disable=SC2086  # options checked above: no blanks or shell characters in them
bash "$tmp/install.sh" "--$0" "--$(pwd)" $passed
exit $?
