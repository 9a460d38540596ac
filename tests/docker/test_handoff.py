"""The teammate's side of a tag: `stackbuild run` starts the reference image and its smoke passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docker.conftest import plan_of, stackbuild

pytestmark = pytest.mark.docker
SMOKE = (
    "python3 -m harness.debug.launch_kernel --kernel-path /opt/stack/ascend-kernel/build/libascend_kernel.so "
    "--grid-dim 1,1,1 --block-dim 16,16,1 --shared-mem 0 --args float32,M,N,K,lda,ldb,ldc"
)


def test_run_starts_the_image_and_the_smoke_passes_in_it(workspace: Path) -> None:
    stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)
    image = plan_of(workspace, "reftest").final_tags["runtime-image"]
    run = stackbuild(workspace, "run", image, "--", "bash", "-c", SMOKE)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Kernel launch success!" in run.stdout
    assert "no NPU on this host" in run.stderr  # this machine has none: no device flags were given
    failing = stackbuild(workspace, "run", image, "--", "bash", "-c", "exit 7")
    assert failing.returncode == 7  # the container's exit code is the command's
