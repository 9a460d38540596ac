#!/bin/bash
# stackbuild: builds component tilelang-ascend. Each of the manifest's build steps (step-N.sh beside
# this file) runs in its own bash -eo pipefail in the component's directory, in order: the first
# that fails stops the build, and nothing a step does (exit 0, set +e) skips another step or the
# artifact checks after them.
set -o pipefail
cd /opt/stack/tilelang-ascend || exit 1
# Compilers called by name go through the toolkit's wrappers, which use the compile cache when this
# build mounts it (builder/plan/compile_cache.py); its statistics count this build's compilations.
export PATH=/opt/stackbuild/compilers:"$PATH"
# A compiler's temporary files change its temporary directory, an object taken from the cache does not:
# the directory is changed either way, so the layer holds it either way.
touch -c -- "${TMPDIR:-/tmp}" || exit 1
if [ -x /mnt/stackbuild-compile-cache ]; then /mnt/stackbuild-compile-cache --zero-stats >/dev/null || exit 1; fi
echo 'stackbuild: tilelang-ascend: step 1/1: bash install_ascend.sh'
bash -eo pipefail /opt/stackbuild/steps/tilelang-ascend/step-1.sh || { code=$?; echo 'stackbuild: tilelang-ascend: build step 1/1: bash install_ascend.sh failed'" (exit code $code)" >&2; exit "$code"; }
if [ -x /mnt/stackbuild-compile-cache ]; then
    /mnt/stackbuild-compile-cache --print-stats | awk -F '\t' '{ n[$1] = $2 } END { printf "stackbuild: tilelang-ascend: compile cache: %d hits, %d misses, %d preprocessor-mode lookups\n", n["direct_cache_hit"] + n["preprocessed_cache_hit"], n["cache_miss"], n["preprocessed_cache_hit"] + n["preprocessed_cache_miss"] }'
fi
test -e set_env.sh || { echo 'stackbuild: tilelang-ascend did not produce the artifact set_env.sh' >&2; exit 1; }
test -e tilelang || { echo 'stackbuild: tilelang-ascend did not produce the artifact tilelang' >&2; exit 1; }
test -e build || { echo 'stackbuild: tilelang-ascend did not produce the artifact build' >&2; exit 1; }
test -e src || { echo 'stackbuild: tilelang-ascend did not produce the artifact src' >&2; exit 1; }
test -e 3rdparty/tvm/python || { echo 'stackbuild: tilelang-ascend did not produce the artifact 3rdparty/tvm/python' >&2; exit 1; }
test -e 3rdparty/catlass/include || { echo 'stackbuild: tilelang-ascend did not produce the artifact 3rdparty/catlass/include' >&2; exit 1; }
test -e 3rdparty/shmem/include || { echo 'stackbuild: tilelang-ascend did not produce the artifact 3rdparty/shmem/include' >&2; exit 1; }
test -e 3rdparty/shmem/src/device || { echo 'stackbuild: tilelang-ascend did not produce the artifact 3rdparty/shmem/src/device' >&2; exit 1; }
test -e 3rdparty/pto-isa/include || { echo 'stackbuild: tilelang-ascend did not produce the artifact 3rdparty/pto-isa/include' >&2; exit 1; }
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
