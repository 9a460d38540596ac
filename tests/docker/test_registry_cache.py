"""The registry stage cache between two machines: two Docker daemons with their own image stores and
a loopback docker-registry. What one pushes, the other pulls (probed there) instead of building."""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from builder.engine import connect
from tests.conftest import TEST_PREFIX
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
            machine_b = connect(daemon.host)
            assert machine_b.tags(f"{TEST_PREFIX}/stage/*") == set()  # an empty image store
            run = stackbuild(workspace, "build", "reftest", "--cache-from", cache, env={"DOCKER_HOST": daemon.host})
            assert run.returncode == 0, run.stderr[-3000:]
            assert f"[stackbuild] 0 built, {len(stages)} pulled, 0 cached" in run.stderr
            assert "smoke: launch: passed" in run.stderr
            assert {s.tag() for s in stages} <= machine_b.tags(f"{TEST_PREFIX}/stage/*")
            assert not {t for t in machine_b.tags(f"{address}/*")}  # registry names dropped after tagging
        finally:
            daemon.remove()
            shutil.rmtree(daemon.base, ignore_errors=True)


def test_a_wrong_registry_password_is_one_line_and_appears_nowhere(workspace: Path, tmp_path: Path) -> None:
    """Credentials come from Docker's config (`docker login`); refused ones stop a push in one line
    naming the registry, and the password is in no output or log."""
    password = "wrong-" + os.urandom(8).hex()
    stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)
    with registry(tmp_path / "registry", users={"ci": "the-right-one"}) as address:
        config = tmp_path / "docker-config"
        config.mkdir()
        token = base64.b64encode(f"ci:{password}".encode()).decode()
        (config / "config.json").write_text(json.dumps({"auths": {address: {"auth": token}}}))
        env = {"DOCKER_CONFIG": str(config)}
        run = stackbuild(workspace, "build", "reftest", "--no-smoke", "--cache-to", f"{address}/cache", env=env)
    assert run.returncode == 1
    errors = [line for line in run.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, run.stderr[-2000:]
    assert f"registry {address} refused the credentials" in errors[0] and f"`docker login {address}`" in errors[0]
    logs = "".join(p.read_text(errors="replace") for p in (workspace / ".stackbuild" / "logs").rglob("*.log"))
    for secret in (password, token):
        assert secret not in run.stdout + run.stderr + logs
