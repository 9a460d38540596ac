#!/bin/bash
# stackbuild: builds component catlass. Each of the manifest's build steps (step-N.sh beside
# this file) runs in its own bash -eo pipefail in the component's directory, in order: the first
# that fails stops the build, and nothing a step does (exit 0, set +e) skips another step or the
# artifact checks after them.
set -o pipefail
cd /opt/stack/catlass || exit 1
# Compilers called by name go through the toolkit's wrappers, which use the compile cache when this
# build mounts it (builder/plan/compile_cache.py); its statistics count this build's compilations.
export PATH=/opt/stackbuild/compilers:"$PATH"
# A compiler's temporary files change its temporary directory, an object taken from the cache does not:
# the directory is changed either way, so the layer holds it either way.
touch -c -- "${TMPDIR:-/tmp}" || exit 1
if [ -x /mnt/stackbuild-compile-cache ]; then /mnt/stackbuild-compile-cache --zero-stats >/dev/null || exit 1; fi
echo 'stackbuild: catlass: step 1/1: bash scripts/build.sh 00_basic_matmul'
bash -eo pipefail /opt/stackbuild/steps/catlass/step-1.sh || { code=$?; echo 'stackbuild: catlass: build step 1/1: bash scripts/build.sh 00_basic_matmul failed'" (exit code $code)" >&2; exit "$code"; }
if [ -x /mnt/stackbuild-compile-cache ]; then
    /mnt/stackbuild-compile-cache --print-stats | awk -F '\t' '{ n[$1] = $2 } END { printf "stackbuild: catlass: compile cache: %d hits, %d misses, %d preprocessor-mode lookups\n", n["direct_cache_hit"] + n["preprocessed_cache_hit"], n["cache_miss"], n["preprocessed_cache_hit"] + n["preprocessed_cache_miss"] }'
fi
test -e output/bin/00_basic_matmul || { echo 'stackbuild: catlass did not produce the artifact output/bin/00_basic_matmul' >&2; exit 1; }
# Python byte code the steps made, made again reproducibly: checked-hash .pyc (valid whatever the
# sources' mtimes), compiled in path order with a fixed hash seed (set constants in one order).
if command -v python3 >/dev/null; then
PYTHONHASHSEED=0 python3 - <<'PY' || exit 1
import pathlib, py_compile, sys
tag = f".{sys.implementation.cache_tag}"  # only this python3's byte code: others it cannot make
for pyc in sorted(pathlib.Path(".").rglob(f"__pycache__/*{tag}*.pyc")):
    module, _, rest = pyc.name.partition(tag)
    source = pyc.parent.parent / f"{module}.py"
    level = rest.split(".opt-")[1].split(".")[0] if ".opt-" in rest else ""
    if source.is_file():
        mode = py_compile.PycInvalidationMode.CHECKED_HASH
        py_compile.compile(str(source.resolve()), str(pyc), invalidation_mode=mode, optimize=int(level or -1))
PY
fi
