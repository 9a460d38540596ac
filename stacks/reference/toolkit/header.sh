#!/bin/sh
# @PACKAGE@ @VERSION@ (@ARCH@): self-extracting installer of the CPU simulation of the
# CANN toolkit used by stackbuild's reference stack. This is NOT Huawei CANN.
# Same shape as CANN's makeself .run files: this header, then a gzip'd tarball.
payload_line=@PAYLOAD_LINE@
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cpusim-toolkit.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
if ! tail -n +"$payload_line" "$0" | tar -xzf - -C "$tmp" 2>/dev/null; then
    echo "[Toolkit] [ERROR] the package is corrupt or truncated: $0" >&2
    exit 1
fi
bash "$tmp/install.sh" "$@"
exit $?
