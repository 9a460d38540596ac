"""Faults during builds: the builder killed at random points, a full disk under the build
context. After each, nothing half-done looks built and the next build completes."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from builder.cli.configuration import cache_root
from builder.engine import Engine, EngineError, connect
from builder.engine.docker_engine import DockerEngine
from builder.store.cache import Cache
from builder.verify.probes import run_probes
from tests.conftest import ROOT, TEST_PREFIX
from tests.docker.conftest import SecondDaemon, plan_of, stackbuild, stage_tags, write_variant

TRIALS = 20
# Components whose source a trial changes, so each trial has stages to build (and to interrupt).
TOUCHED = ("tilelang", "tilelang-compiler", "ascend-kernel", "runtime", "harness")


def start_build(root: Path, name: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "builder", "--root", str(root), "build", name, "--no-smoke"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )


def check_tagged_stages_are_complete(engine: Engine, root: Path, name: str, new_tags: set[str]) -> None:
    """Every stage image tagged is one of the plan's, and its probes pass in it."""
    plan = plan_of(root, name)
    by_tag = {stage.tag(): stage for stage in plan.order()}
    for tag in new_tags:
        if not tag.startswith(f"{TEST_PREFIX}/stage/"):
            continue
        stage = by_tag.get(tag)
        assert stage is not None, f"{tag} is not a stage of the current plan"
        results = run_probes(engine, tag, stage.probe_workdir, stage.probes)
        assert all(r.ok for r in results), (tag, results)


def check_cache_is_consistent(cache: Cache) -> None:
    for blob in (cache.root / "blobs" / "sha256").glob("*"):
        digest = hashlib.sha256(blob.read_bytes()).hexdigest()
        assert digest == blob.name, f"{blob} holds other content"
    for record in (cache.root / "records").rglob("*.json"):
        json.loads(record.read_text())


def test_random_kills_never_leave_a_stage_that_looks_built(workspace: Path, engine: DockerEngine) -> None:
    name = write_variant(workspace, "reftest-kill", [])
    stackbuild(workspace, "lock", name, check=True)
    rng = random.Random(8)
    interrupted: dict[str, int] = {}
    try:
        for _ in range(TRIALS):
            component = rng.choice(TOUCHED)
            (workspace / "stacks" / "reference" / component / ".trial").write_text(uuid.uuid4().hex)
            before = stage_tags(engine)
            proc = start_build(workspace, name)
            time.sleep(rng.uniform(0.5, 8.0))
            proc.send_signal(signal.SIGKILL)
            _, err = proc.communicate(timeout=60)
            building = [
                line.split()[1].rstrip(":")
                for line in err.splitlines()
                if line.endswith(": building") or " building - " in line
            ]
            for stage in building:
                interrupted[stage] = interrupted.get(stage, 0) + 1
            check_tagged_stages_are_complete(engine, workspace, name, stage_tags(engine) - before)
        assert sum(interrupted.values()) >= TRIALS // 2, interrupted  # most kills hit a stage mid-build
        rerun = stackbuild(workspace, "build", name)
        assert rerun.returncode == 0, rerun.stderr[-3000:]
        assert "smoke: launch: passed" in rerun.stderr
        check_cache_is_consistent(Cache(cache_root(os.environ)))
    finally:
        for component in TOUCHED:  # the shared workspace's sources as they were, whatever happened
            (workspace / "stacks" / "reference" / component / ".trial").unlink(missing_ok=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs for the full-disk case needs root")
def test_a_full_disk_under_the_build_context_fails_cleanly_then_builds(workspace: Path) -> None:
    name = write_variant(workspace, "reftest-disk", [])
    stackbuild(workspace, "lock", name, check=True)
    stackbuild(workspace, "build", name, "--no-smoke", check=True)  # all built: only harness is left to build below
    trial = workspace / "stacks" / "reference" / "harness" / ".trial"
    trial.write_text(uuid.uuid4().hex)
    # Contexts are written under the cache's tmp directory (where its blobs are linked from): for
    # this build, a file system there with no room.
    small = cache_root(os.environ) / "tmp"
    small.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(small)], check=True)
        try:
            run = stackbuild(workspace, "build", name, "--no-smoke")
        finally:
            subprocess.run(["umount", str(small)], check=True)
        assert run.returncode == 1
        assert "stage harness failed: cannot write its build context" in run.stderr
        assert "No space left on device" in run.stderr
        assert "Traceback" not in run.stderr
        rerun = stackbuild(workspace, "build", name)
        assert rerun.returncode == 0, rerun.stderr[-3000:]
        assert "[stackbuild] harness: built" in rerun.stderr and "smoke: launch: passed" in rerun.stderr
    finally:  # the workspace's harness is every later test's: as it was
        trial.unlink()


@pytest.mark.skipif(os.geteuid() != 0, reason="starting a second Docker daemon needs root")
def test_a_daemon_restart_mid_build_fails_cleanly_then_builds(workspace: Path, tmp_path: Path) -> None:
    daemon = SecondDaemon(tmp_path)
    daemon.start()
    try:
        env = {"DOCKER_HOST": daemon.host}
        proc = subprocess.Popen(
            [sys.executable, "-m", "builder", "--root", str(workspace), "build", "reftest", "--no-smoke"],
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ, PYTHONPATH=str(ROOT), **env),
        )
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:  # the daemon is restarted while the toolkit stage builds
            seen.append(line)
            if line.startswith("[stackbuild] toolkit: building"):
                daemon.stop()
                daemon.start()
                break
        assert seen and seen[-1].startswith("[stackbuild] toolkit: building"), "".join(seen)[-2000:]
        rest = proc.stderr.read()
        assert proc.wait(timeout=600) == 1, rest
        assert "Traceback" not in rest and "internal error" not in rest
        assert re.search(r"stackbuild: error: stage [\w.-]+ failed: ", rest), rest[-2000:]
        engine = connect(daemon.host)
        check_tagged_stages_are_complete(engine, workspace, "reftest", engine.tags(f"{TEST_PREFIX}/stage/*"))
        rerun = stackbuild(workspace, "build", "reftest", env=env)
        assert rerun.returncode == 0, rerun.stderr[-3000:]
        assert "[stackbuild] toolkit: built" in rerun.stderr and "smoke: launch: passed" in rerun.stderr
    finally:
        daemon.remove()
    assert subprocess.run(["ip", "link", "show", "docker0"], capture_output=True).returncode == 0, "docker0 is gone"


def test_two_builds_at_once_build_each_stage_once(workspace: Path, engine: DockerEngine) -> None:
    """Two stackbuilds of one stack at once: each stage image is tagged once (the file lock makes
    the second wait and take the first's image instead of building it again)."""
    name = write_variant(workspace, "reftest-twice", [])
    stackbuild(workspace, "lock", name, check=True)
    (workspace / "stacks" / "reference" / "tilelang" / ".trial").write_text(uuid.uuid4().hex)
    since = int(time.time()) - 1
    first, second = start_build(workspace, name), start_build(workspace, name)
    for proc in (first, second):
        _, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err[-3000:]
    until = int(time.time()) + 1
    events = engine.client.events(since=since, until=until, filters={"type": "image", "event": "tag"}, decode=True)
    tagged = [event["Actor"]["Attributes"]["name"] for event in events]
    plan = plan_of(workspace, name)
    for stage in ("tilelang", "tilelang-compiler", "ascend-kernel", "harness", "devel-image", "runtime-image"):
        assert tagged.count(plan.stages[stage].tag()) == 1, (stage, tagged)
    (workspace / "stacks" / "reference" / "tilelang" / ".trial").unlink()


def test_a_container_over_its_timeout_is_an_engine_error(workspace: Path, engine: DockerEngine) -> None:
    """A probe or smoke that hangs ends as the project's error (not a requests ReadTimeout), and its container goes."""
    stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)
    image = plan_of(workspace, "reftest").stages["base-runtime"].tag()
    before = {c.id for c in engine.client.containers.list(all=True)}
    with pytest.raises(EngineError, match=r"did not finish within 2s"):
        engine.run(image, ["sleep", "30"], timeout=2)
    assert {c.id for c in engine.client.containers.list(all=True)} == before
