#!/bin/bash
# stackbuild: builds component devkit. The manifest's build steps (step-N.sh beside this
# file) run in order in one shell with bash -eo pipefail: the first failing command stops the
# build. The artifact checks run after them, whatever the steps do.
set -Eeo pipefail
cd /opt/stack/devkit
(
  trap 'echo "stackbuild: devkit: build step ${stackbuild_step} failed (exit code $?)" >&2' ERR
  stackbuild_step='1/1: bash build.sh --pkg'
  echo "stackbuild: devkit: step ${stackbuild_step}"
  source /opt/stackbuild/steps/devkit/step-1.sh
)
test -e output || { echo 'stackbuild: devkit did not produce the artifact output' >&2; exit 1; }
