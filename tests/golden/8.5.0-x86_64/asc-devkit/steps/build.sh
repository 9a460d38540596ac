#!/bin/bash
# stackbuild: builds component asc-devkit. Each of the manifest's build steps (step-N.sh beside
# this file) runs in its own bash -eo pipefail in the component's directory, in order: the first
# that fails stops the build, and nothing a step does (exit 0, set +e) skips another step or the
# artifact checks after them.
set -o pipefail
cd /opt/stack/asc-devkit || exit 1
# What the install paths hold before the steps (the parents' files): after them, only what the steps
# added or changed there is this component's installs (installs.py beside this file).
python3 /opt/stackbuild/steps/asc-devkit/installs.py before /tmp/stackbuild-installs-asc-devkit.json /usr/local/Ascend/cann-8.5.0 || exit 1
echo 'stackbuild: asc-devkit: step 1/5: mkdir -p third_party/llvm-15 && tar -xzf third_party/pkg/llvm-project-llvmorg-15.0.4.tar.gz --strip- ...'
bash -eo pipefail /opt/stackbuild/steps/asc-devkit/step-1.sh || { code=$?; echo 'stackbuild: asc-devkit: build step 1/5: mkdir -p third_party/llvm-15 && tar -xzf third_party/pkg/llvm-project-llvmorg-15.0.4.tar.gz --strip- ... failed'" (exit code $code)" >&2; exit "$code"; }
echo 'stackbuild: asc-devkit: step 2/5: mkdir -p third_party/json && cmake -E chdir third_party/json cmake -E tar xf ../pkg/include.zip --fo ...'
bash -eo pipefail /opt/stackbuild/steps/asc-devkit/step-2.sh || { code=$?; echo 'stackbuild: asc-devkit: build step 2/5: mkdir -p third_party/json && cmake -E chdir third_party/json cmake -E tar xf ../pkg/include.zip --fo ... failed'" (exit code $code)" >&2; exit "$code"; }
echo 'stackbuild: asc-devkit: step 3/5: mkdir -p third_party/makeself && cp /usr/bin/makeself third_party/makeself/makeself.sh && cp /usr/sh ...'
bash -eo pipefail /opt/stackbuild/steps/asc-devkit/step-3.sh || { code=$?; echo 'stackbuild: asc-devkit: build step 3/5: mkdir -p third_party/makeself && cp /usr/bin/makeself third_party/makeself/makeself.sh && cp /usr/sh ... failed'" (exit code $code)" >&2; exit "$code"; }
echo 'stackbuild: asc-devkit: step 4/5: bash build.sh --pkg --cann_3rd_lib_path="$PWD/third_party"'
bash -eo pipefail /opt/stackbuild/steps/asc-devkit/step-4.sh || { code=$?; echo 'stackbuild: asc-devkit: build step 4/5: bash build.sh --pkg --cann_3rd_lib_path="$PWD/third_party" failed'" (exit code $code)" >&2; exit "$code"; }
echo 'stackbuild: asc-devkit: step 5/5: bash build_out/cann-asc-devkit_*_linux-"$(uname -m)".run --full --quiet --install-for-all --install- ...'
bash -eo pipefail /opt/stackbuild/steps/asc-devkit/step-5.sh || { code=$?; echo 'stackbuild: asc-devkit: build step 5/5: bash build_out/cann-asc-devkit_*_linux-"$(uname -m)".run --full --quiet --install-for-all --install- ... failed'" (exit code $code)" >&2; exit "$code"; }
python3 /opt/stackbuild/steps/asc-devkit/installs.py stage /tmp/stackbuild-installs-asc-devkit.json /opt/stackbuild/installs/asc-devkit /usr/local/Ascend/cann-8.5.0 || exit 1
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
