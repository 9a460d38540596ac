#!/bin/bash
# The Ascend C devkit of the CPU-simulated toolkit. CANN ships its devkit (asc-devkit) inside the
# toolkit package, not as a package of its own: asc-devkit's docs/quick_start.md installs only the
# toolkit, catlass builds FROM the stock toolkit image (Dockerfile.atlasa2), and the official 8.5.0
# image installs toolkit, ops and nnal only. So this one is built and installed by the toolkit's
# install.sh, inside its staging directory, before it sets the modes:
#   bash asc-devkit/install.sh STAGING [--library-only]
# (--library-only for a runtime-only install, --whitelist=nnrt: the host library kernels link, not the
# headers. Whether CANN's nnrt subset holds asc-devkit's host libraries is not known here; if it does
# not, a kernel library linking one fails the runtime image's closure probe, naming it.)
# It puts the headers into STAGING/ascendc/include (ascendc/kernel_operator.h) and builds
# STAGING/lib64/libascendc.so, beside the toolkit's other host libraries (asc-devkit installs its
# host libraries, libacl_rtc.so and libascendc_runtime.a, into the toolkit's lib64 too:
# scripts/package/asc-devkit/asc-devkit.xml), where the runtime image and set_env.sh's
# LD_LIBRARY_PATH find them. The library is compiled by the toolkit's own ascendcc (its header
# refuses plain cc) and linked by the system C compiler ($CC, as libascendcl.so is), so nothing in
# it names the staging directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
staging=${1:?usage: install.sh STAGING [--library-only] (the toolkit being installed)}
# The package's own compiler, staged or not (a runtime-only install stages none).
ascendcc=$here/../tools/ccec_compiler/bin/ascendcc
[ -x "$ascendcc" ] || { echo "asc-devkit: no ascendcc at $ascendcc" >&2; exit 1; }

if [ "${2:-}" != --library-only ]; then
    mkdir -p "$staging/ascendc"
    cp -R "$here/include" "$staging/ascendc/include"
fi
objects=$(mktemp -d)
trap 'rm -rf "$objects"' EXIT
for source in "$here"/src/*.c; do
    "$ascendcc" -O2 -c -I"$here/include" "$source" -o "$objects/$(basename "$source" .c).o"
done
"${CC:-cc}" -shared -Wl,-soname,libascendc.so "$objects"/*.o -o "$staging/lib64/libascendc.so"
