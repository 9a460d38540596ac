#!/bin/bash
# stackbuild: builds component devkit. Each of the manifest's build steps (step-N.sh beside
# this file) runs in its own bash -eo pipefail in the component's directory, in order: the first
# that fails stops the build, and nothing a step does (exit 0, set +e) skips another step or the
# artifact checks after them.
set -o pipefail
cd /opt/stack/devkit || exit 1
echo 'stackbuild: devkit: step 1/1: bash build.sh --pkg'
bash -eo pipefail /opt/stackbuild/steps/devkit/step-1.sh || { code=$?; echo 'stackbuild: devkit: build step 1/1: bash build.sh --pkg failed'" (exit code $code)" >&2; exit "$code"; }
test -e output || { echo 'stackbuild: devkit did not produce the artifact output' >&2; exit 1; }
