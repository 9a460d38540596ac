#!/bin/bash
# Source this file to use tilelang-compiler where it was built, as tilelang-ascend's set_env.sh is
# sourced for its tree: the directory holding this file is TILELANG_COMPILER_ROOT, the installed
# package and its entry point are under python/.
TILELANG_COMPILER_ROOT=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
export TILELANG_COMPILER_ROOT
export PYTHONPATH="$TILELANG_COMPILER_ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$TILELANG_COMPILER_ROOT/python/bin:$PATH"
