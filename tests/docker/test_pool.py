"""A pool of engines: two Docker daemons share one build through a registry on loopback. Each
builds some of the stages, none is built twice, and the result is the one-engine build's."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from builder.engine.docker_engine import DockerEngine
from tests.docker.conftest import SecondDaemon, plan_of, stackbuild, touch
from tests.helpers import registry

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(os.geteuid() != 0, reason="starting a second Docker daemon needs root"),
]
LOCAL = "unix:///var/run/docker.sock"
TREE = "cd /opt/stack && find . -type f ! -name '*.pyc' ! -path '*/CMakeFiles/*' -print0 | sort -z | xargs -0 sha256sum"


def test_two_engines_share_a_build_and_give_the_one_engine_result(
    workspace: Path, tmp_path: Path, engine: DockerEngine
) -> None:
    edited = [workspace / "stacks" / "reference" / c / "README.md" for c in ("tilelang", "runtime")]
    old = [touch(path) for path in edited]
    try:
        alone = stackbuild(workspace, "build", "reftest", "--no-smoke")
        assert alone.returncode == 0, alone.stderr[-3000:]
        plan = plan_of(workspace, "reftest")
        devel = plan.final_tags["devel-image"]
        one_engine = engine.run(devel, ["sh", "-c", TREE]).output
        rebuilt = set(re.findall(r"^\[stackbuild\] ([\w-]+): built", alone.stderr, re.M))
        changed = [s for s in plan.order() if s.name in rebuilt]
        assert len(changed) >= 5, alone.stderr  # the two components, what depends on them, the finals
        for stage in changed:  # this engine loses them: the pool builds them again
            engine.remove(stage.tag())

        daemon = SecondDaemon(Path(tempfile.mkdtemp(prefix="sb-p-", dir="/tmp")))
        daemon.start()
        try:
            with registry(tmp_path / "registry") as address:
                cache = f"{address}/team/cache"
                pool = ["--engine", LOCAL, "--engine", daemon.host, "--cache-to", cache]
                run = stackbuild(workspace, "build", "reftest", *pool)
            assert run.returncode == 0, run.stderr[-3000:]
            placed = re.findall(r"^\[stackbuild\] ([\w-]+): building - on (\S+)$", run.stderr, re.M)
            assert sorted(name for name, _ in placed) == sorted(s.name for s in changed)  # each built once
            assert {where for _, where in placed} == {LOCAL, daemon.host}  # both engines built
            assert "smoke: launch: passed" in run.stderr
            assert engine.run(devel, ["sh", "-c", TREE]).output == one_engine
        finally:
            daemon.remove()
            shutil.rmtree(daemon.base, ignore_errors=True)
    finally:
        for path, text in zip(edited, old, strict=True):
            path.write_text(text)
