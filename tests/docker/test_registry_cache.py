"""The registry stage cache between two machines: two Docker daemons with their own image stores and
a loopback docker-registry. What one pushes, the other pulls (probed there) instead of building."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from builder.engine.docker_engine import DockerEngine
from tests.docker.conftest import SecondDaemon, plan_of, stackbuild
from tests.helpers import registry

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(os.geteuid() != 0, reason="starting a second Docker daemon needs root"),
]


def test_a_second_machine_pulls_every_stage_the_first_pushed_and_builds_none(workspace: Path, tmp_path: Path) -> None:
    stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)  # machine A has every stage
    with registry(tmp_path / "registry") as address:
        cache = f"{address}/team/stackbuild-cache"
        pushed = stackbuild(workspace, "build", "reftest", "--no-smoke", "--cache-to", cache, check=True)
        stages = plan_of(workspace, "reftest").order()
        assert pushed.stderr.count(": pushing") == len(stages)  # present stages fill the cache too
        # A short path: the daemon's containerd socket lives under it (unix socket paths are short).
        daemon = SecondDaemon(Path(tempfile.mkdtemp(prefix="sb-b-", dir="/tmp")))
        daemon.start()
        try:
            machine_b = DockerEngine(daemon.host)
            assert machine_b.tags("stackbuild/stage/*") == set()  # an empty image store
            run = stackbuild(workspace, "build", "reftest", "--cache-from", cache, env={"DOCKER_HOST": daemon.host})
            assert run.returncode == 0, run.stderr[-3000:]
            assert f"[stackbuild] 0 built, {len(stages)} pulled, 0 cached" in run.stderr
            assert "smoke: launch: passed" in run.stderr
            assert {s.tag() for s in stages} <= machine_b.tags("stackbuild/stage/*")
            assert not {t for t in machine_b.tags(f"{address}/*")}  # registry names dropped after tagging
        finally:
            daemon.remove()
            shutil.rmtree(daemon.base, ignore_errors=True)
