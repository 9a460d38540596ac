"""A pool of engines: two Docker daemons share one publish through a registry on loopback. Each
builds some of the stages, none is built twice, and the result is the one-engine publish's: the same
final images and the same image index in the registry. Routed by architecture, as each daemon reports
it: the stages of a plan land on the daemon of its architecture alone, and the index is again the
one-engine publish's."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from builder.cli.configuration import cache_root
from builder.engine import connect
from builder.engine.docker_engine import DockerEngine
from builder.engine.registry_api import OCI_INDEX
from builder.model.arch import Arch
from builder.store.cache import Cache
from tests.conftest import ROOT
from tests.docker.conftest import SecondDaemon, plan_of, stackbuild, touch
from tests.helpers import registry, registry_get

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(os.geteuid() != 0, reason="starting a second Docker daemon needs root"),
]
LOCAL = "unix:///var/run/docker.sock"
RELEASE = "8.5.0-910b-debian12-py3.11"
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


def test_two_engines_share_a_publish_routed_by_architecture_and_give_the_one_engine_index(
    workspace: Path, tmp_path: Path, engine: DockerEngine
) -> None:
    edited = [workspace / "stacks" / "reference" / c / "README.md" for c in ("tilelang", "runtime")]
    old = [touch(path) for path in edited]
    lockfile = workspace / "lockfiles" / "reftest.lock.json"
    locked = lockfile.read_text()
    try:
        stackbuild(workspace, "lock", "reftest", check=True)  # publish builds only what the lock pins
        with registry(tmp_path / "registry") as address:
            alone = stackbuild(workspace, "publish", "reftest", *to(address, "alone"))
            assert alone.returncode == 0, alone.stderr[-3000:]
            assert "smoke: launch: passed" in alone.stderr
            alone_ids, alone_index = final_ids(engine, workspace), indexes(address, "alone")
            plan = plan_of(workspace, "reftest")
            devel = plan.final_tags["devel-image"]
            one_engine = engine.run(devel, ["sh", "-c", TREE]).output
            rebuilt = set(re.findall(r"^\[stackbuild\] ([\w-]+): built", alone.stderr, re.M))
            changed = [s for s in plan.order() if s.name in rebuilt]
            assert len(changed) >= 5, alone.stderr  # the two components, what depends on them, the finals
            for stage in changed:  # this engine loses them: the pool builds them again
                engine.remove(stage.tag())
            smokes = Cache(cache_root(os.environ)).records
            for name in smokes.every("smoke"):  # and the recorded pass: the pool's finals are smoked again
                smokes.remove("smoke", name)

            daemon = SecondDaemon(Path(tempfile.mkdtemp(prefix="sb-p-", dir="/tmp")))
            daemon.start()
            try:
                pool = ["--engine", LOCAL, "--engine", daemon.host]
                run = stackbuild(
                    workspace, "publish", "reftest", *to(address, "pool"), *pool, "--cache-to", f"{address}/team/cache"
                )
                assert run.returncode == 0, run.stderr[-3000:]
                placed = re.findall(r"^\[stackbuild\] ([\w-]+): building - on (\S+) \(native\)$", run.stderr, re.M)
                assert sorted(name for name, _ in placed) == sorted(s.name for s in changed)  # each built once
                assert {where for _, where in placed} == {LOCAL, daemon.host}  # both engines built
                assert "smoke: launch: passed (exit code 0)" in run.stderr  # run, not the recorded pass
                assert indexes(address, "pool") == alone_index
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
                    workspace, reported, "publish", "reftest", *to(address, "routed"), *pool,
                    "--cache-to", f"{address}/team/routed",
                )  # fmt: skip
                assert routed.returncode == 0, routed.stderr[-3000:]
                assert line in routed.stdout + routed.stderr
                placed = re.findall(r"^\[stackbuild\] ([\w-]+): building - on (\S+) \((\w+)\)$", routed.stderr, re.M)
                assert sorted(name for name, _, _ in placed) == sorted(s.name for s in changed)
                assert {(where, how) for _, where, how in placed} == {(daemon.host, "native")}
                built = re.findall(r"^\[stackbuild\] ([\w-]+): built ", routed.stderr, re.M)
                assert sorted(built) == sorted(s.name for s in changed)  # built there, not pulled
                assert indexes(address, "routed") == alone_index
            finally:
                daemon.remove()
                shutil.rmtree(daemon.base, ignore_errors=True)
        assert engine.run(devel, ["sh", "-c", TREE]).output == one_engine
        assert final_ids(engine, workspace) == alone_ids  # the finals, gathered here, are the one engine's
    finally:
        for path, text in zip(edited, old, strict=True):
            path.write_text(text)
        lockfile.write_text(locked)


def to(address: str, namespace: str) -> list[str]:
    """publish's arguments for this host's architecture (the one the workspace is locked for) to namespace."""
    return ["--registry", f"{address}/{namespace}", "--arch", str(Arch.host())]


def indexes(address: str, namespace: str) -> dict[str, tuple[str, list[tuple[str, str]]]]:
    """Each release tag publish put in namespace, read through the registry's HTTP API: the digest of its
    index and each image manifest it lists (platform, digest)."""
    found = {}
    for tag in (RELEASE, f"{RELEASE}-runtime"):
        body = registry_get(address, f"{namespace}/reftest/manifests/{tag}", OCI_INDEX)
        assert body is not None, f"{namespace}/reftest:{tag} is not there"
        listed = [(m["platform"]["architecture"], m["digest"]) for m in json.loads(body)["manifests"]]
        assert listed, f"{namespace}/reftest:{tag} lists no image"
        found[tag] = (f"sha256:{hashlib.sha256(body).hexdigest()}", listed)
    return found


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
