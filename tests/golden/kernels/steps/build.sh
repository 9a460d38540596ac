#!/bin/bash
# stackbuild: builds component kernels. Each of the manifest's build steps (step-N.sh beside
# this file) runs in its own bash -eo pipefail in the component's directory, in order: the first
# that fails stops the build, and nothing a step does (exit 0, set +e) skips another step or the
# artifact checks after them.
set -o pipefail
cd /opt/stack/kernels || exit 1
echo 'stackbuild: kernels: step 1/1: bash scripts/build.sh 00_basic_matmul'
bash -eo pipefail /opt/stackbuild/steps/kernels/step-1.sh || { code=$?; echo 'stackbuild: kernels: build step 1/1: bash scripts/build.sh 00_basic_matmul failed'" (exit code $code)" >&2; exit "$code"; }
test -e output/bin/00_basic_matmul || { echo 'stackbuild: kernels did not produce the artifact output/bin/00_basic_matmul' >&2; exit 1; }
test -e output/lib || { echo 'stackbuild: kernels did not produce the artifact output/lib' >&2; exit 1; }
