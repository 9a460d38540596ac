#!/usr/bin/env bash
# Build the six layers of the reference stack natively (no Docker) under PREFIX, in
# dependency order, the way a user would by hand; with --smoke, run the matmul launch. The Ascend C
# layer comes inside the toolkit package, as asc-devkit does in CANN: installing the toolkit
# installs it (<toolkit>/ascendc/include, lib64/libascendc.so), and the layers above find it from
# ASCEND_HOME_PATH, which the toolkit's set_env.sh sets.
# Writes PREFIX/env.sh with the environment the built stack needs.
#   usage: build-native.sh PREFIX [--smoke]
# Needs: bash, a C compiler, make, cmake, python3 with pip, setuptools and numpy.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=${1:?usage: build-native.sh PREFIX [--smoke]}
smoke=${2:-}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
python=${PYTHON:-python3}
arch=$(uname -m)
step() { printf '==> %s\n' "$*"; }

rm -rf "$prefix/src" "$prefix/python"
mkdir -p "$prefix/dist" "$prefix/src"
for layer in tilelang tilelang-compiler ascend-kernel runtime harness; do
    cp -R "$here/$layer" "$prefix/src/$layer"
done

step "toolkit: pack and install the CPU-simulated CANN toolkit (with its Ascend C devkit)"
# As the reference stack packs it: CANN 8.5.0, its layout cann-8.5.0/ with the `cann` link.
installer=$("$python" "$here/toolkit/pack.py" --arch "$arch" --version 8.5.0 --output-dir "$prefix/dist" | cut -d' ' -f1)
bash "$installer" --install --full --quiet --force --install-for-all --install-path="$prefix/Ascend"
# shellcheck source=/dev/null
source "$prefix/Ascend/cann/set_env.sh"

pip_install() {
    "$python" -m pip install --quiet --no-deps --no-build-isolation --no-index --target "$prefix/python" "$1"
}
step "tilelang: install the DSL"
pip_install "$prefix/src/tilelang"
step "tilelang-compiler: install the compiler"
pip_install "$prefix/src/tilelang-compiler"
export PYTHONPATH=$prefix/python${PYTHONPATH:+:$PYTHONPATH}
export PATH=$prefix/python/bin:$PATH

step "ascend-kernel: build/libascend_kernel.so"
make -C "$prefix/src/ascend-kernel"

step "runtime: build/libascend_runtime.so"
cmake -S "$prefix/src/runtime" -B "$prefix/src/runtime/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$prefix/src/runtime/build"
export ASCEND_RUNTIME_LIB=$prefix/src/runtime/build/libascend_runtime.so

step "harness: install (and its dependency from the reference wheelhouse)"
pip_install "$prefix/src/harness"
"$python" -m pip install --quiet --no-index --find-links "$here/wheelhouse" --target "$prefix/python" simreport==1.0

cat > "$prefix/env.sh" <<ENV
source $prefix/Ascend/cann/set_env.sh
export ASCEND_RUNTIME_LIB=$ASCEND_RUNTIME_LIB
export ASCEND_KERNEL_LIB=$prefix/src/ascend-kernel/build/libascend_kernel.so
export PYTHONPATH=$prefix/python\${PYTHONPATH:+:\$PYTHONPATH}
export PATH=$prefix/python/bin:\$PATH
ENV
step "done: source $prefix/env.sh"

if [ "$smoke" = "--smoke" ]; then
    step "smoke: matmul M=N=K=256 on the CPU device"
    "$python" -m harness.debug.launch_kernel --kernel-path "$prefix/src/ascend-kernel/build/libascend_kernel.so" \
        --grid-dim 1,1,1 --block-dim 16,16,1 --shared-mem 0 --args float32,M,N,K,lda,ldb,ldc
fi
