"""A pool of engines: two Docker daemons share one build through a registry on loopback. Each
builds some of the stages, none is built twice, and the result is the one-engine build's. Routed by
architecture, as each daemon reports it: the stages of a plan land on the daemon of its
architecture alone, and the final images are again the one-engine build's."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from builder.engine import connect
from builder.engine.docker_engine import DockerEngine
from builder.model.arch import Arch
from tests.conftest import ROOT
from tests.docker.conftest import SecondDaemon, plan_of, stackbuild, touch
from tests.helpers import registry

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(os.geteuid() != 0, reason="starting a second Docker daemon needs root"),
]
LOCAL = "unix:///var/run/docker.sock"
# This machine runs one architecture: what each daemon reports is substituted where the daemon's
# answer is read (DockerDaemon.facts); everything above it, the routing and the builds, is stackbuild's.
REPORTING = """
import dataclasses, json, sys
from builder.engine.docker_daemon import DockerDaemon
from builder.model.arch import Arch
reported, answer = json.loads(sys.argv.pop(1)), DockerDaemon.facts
DockerDaemon.facts = lambda self, builder: dataclasses.replace(answer(self, builder), arch=Arch(reported[self.host]))
from builder.__main__ import entry
entry()
"""
TREE = "cd /opt/stack && find . -type f ! -name '*.pyc' ! -path '*/CMakeFiles/*' -print0 | sort -z | xargs -0 sha256sum"


def test_two_engines_share_a_build_routed_by_architecture_and_give_the_one_engine_result(
    workspace: Path, tmp_path: Path, engine: DockerEngine
) -> None:
    edited = [workspace / "stacks" / "reference" / c / "README.md" for c in ("tilelang", "runtime")]
    old = [touch(path) for path in edited]
    try:
        alone = stackbuild(workspace, "build", "reftest", "--no-smoke")
        assert alone.returncode == 0, alone.stderr[-3000:]
        alone_ids = final_ids(engine, workspace)
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
                pool = ["--engine", LOCAL, "--engine", daemon.host]
                run = stackbuild(workspace, "build", "reftest", *pool, "--cache-to", f"{address}/team/cache")
                assert run.returncode == 0, run.stderr[-3000:]
                placed = re.findall(r"^\[stackbuild\] ([\w-]+): building - on (\S+) \(native\)$", run.stderr, re.M)
                assert sorted(name for name, _ in placed) == sorted(s.name for s in changed)  # each built once
                assert {where for _, where in placed} == {LOCAL, daemon.host}  # both engines built
                assert "smoke: launch: passed" in run.stderr
                assert engine.run(devel, ["sh", "-c", TREE]).output == one_engine
                assert final_ids(engine, workspace) == alone_ids

                # The local daemon reports aarch64, the second x86_64: this x86_64 plan's stages all go to
                # the second, the one of its architecture, and are built there (a cache of their own).
                second = connect(daemon.host)
                for stage in changed:
                    for where in (engine, second):
                        if where.image_id(stage.tag()):
                            where.remove(stage.tag())
                reported = {LOCAL: Arch.AARCH64, daemon.host: Arch.X86_64}
                planned = reporting(workspace, reported, "plan", "reftest", *pool)
                line = f"engines: x86_64 stages build natively on {daemon.host}; none on {LOCAL} (aarch64)"
                assert planned.returncode == 0 and line in planned.stdout, planned.stderr[-3000:]
                routed = reporting(
                    workspace, reported, "build", "reftest", *pool, "--cache-to", f"{address}/team/routed"
                )
                assert routed.returncode == 0, routed.stderr[-3000:]
                assert line in routed.stdout + routed.stderr
                placed = re.findall(r"^\[stackbuild\] ([\w-]+): building - on (\S+) \((\w+)\)$", routed.stderr, re.M)
                assert sorted(name for name, _, _ in placed) == sorted(s.name for s in changed)
                assert {(where, how) for _, where, how in placed} == {(daemon.host, "native")}
                built = re.findall(r"^\[stackbuild\] ([\w-]+): built ", routed.stderr, re.M)
                assert sorted(built) == sorted(s.name for s in changed)  # built there, not pulled
            assert engine.run(devel, ["sh", "-c", TREE]).output == one_engine
            assert final_ids(engine, workspace) == alone_ids  # the finals, gathered here, are the one engine's
        finally:
            daemon.remove()
            shutil.rmtree(daemon.base, ignore_errors=True)
    finally:
        for path, text in zip(edited, old, strict=True):
            path.write_text(text)


def final_ids(engine: DockerEngine, workspace: Path) -> dict[str, str | None]:
    """The image id of each final image's tag on the engine."""
    return {final: engine.image_id(tag) for final, tag in plan_of(workspace, "reftest").final_tags.items()}


def reporting(root: Path, reported: dict[str, Arch], *args: str) -> subprocess.CompletedProcess[str]:
    """stackbuild with each engine (by address) reporting the architecture given."""
    return subprocess.run(
        [sys.executable, "-c", REPORTING, json.dumps(reported), "--root", str(root), *args],
        capture_output=True,
        text=True,
        timeout=1800,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
