#!/bin/bash
# stackbuild: builds component kernels. The manifest's build steps (step-N.sh beside this
# file) run in order in one shell with bash -eo pipefail: the first failing command stops the
# build. The artifact checks run after them, whatever the steps do.
set -Eeo pipefail
cd /opt/stack/kernels
(
  trap 'echo "stackbuild: kernels: build step ${stackbuild_step} failed (exit code $?)" >&2' ERR
  stackbuild_step='1/1: bash scripts/build.sh 00_basic_matmul'
  echo "stackbuild: kernels: step ${stackbuild_step}"
  source /opt/stackbuild/steps/kernels/step-1.sh
)
test -e output/bin/00_basic_matmul || { echo 'stackbuild: kernels did not produce the artifact output/bin/00_basic_matmul' >&2; exit 1; }
test -e output/lib || { echo 'stackbuild: kernels did not produce the artifact output/lib' >&2; exit 1; }
