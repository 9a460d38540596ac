"""A stack FROM an official-style CANN image pinned by digest in a registry, toolkit preinstalled.

The image stands in for quay.io/ascend/cann:<ver>-<chip>-<os>-py<x.y>: the reference stack's toolkit
stage (its OS, Python and installed toolkit), pushed to a loopback docker-registry. The stack then
names it by digest only, as catlass's Dockerfile.atlasa2 names the official one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import docker

from builder.engine.docker_engine import DockerEngine
from tests.conftest import ROOT
from tests.docker.conftest import drop, plan_of, push_by_digest, stackbuild
from tests.helpers import registry


def test_a_stack_builds_from_a_cann_image_pinned_by_digest_with_the_toolkit_preinstalled(
    workspace: Path, engine: DockerEngine, tmp_path: Path
) -> None:
    stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)
    toolkit_stage = plan_of(workspace, "reftest").stages["toolkit"].tag()
    client = docker.from_env()
    registry_log = tmp_path / "registry" / "registry.log"
    with registry(tmp_path / "registry") as address:
        official = push_by_digest(client, toolkit_stage, f"{address}/ascend/cann", "8.5.0-910b-debian12-py3.11")
        text = (ROOT / "stacks" / "reference.yaml").read_text().replace("name: reference", "name: reftest-official")
        text, tools = re.subn(r"(?m)^  packages:\n(?:    .*\n)+", "  preinstalled: true\n", text)
        text, bases = re.subn(r"(?m)^base:\n(?:  .*\n)+", f"base:\n  image: {official}\n", text)
        assert tools == bases == 1
        (workspace / "stacks" / "reftest-official.yaml").write_text(text)

        stackbuild(workspace, "lock", "reftest-official", "--arch", "x86_64", check=True)
        lock = json.loads((workspace / "lockfiles" / "reftest-official.lock.json").read_text())
        assert lock["base"] == {"kind": "image", "image": official, "source_date_epoch": 1704067200}
        assert lock["architectures"]["x86_64"]["packages"] == []
        drop(client, official)  # the lock read the image's apt state: the build must pull it again
        manifest_get = f" /v2/ascend/cann/manifests/{official.rpartition('@')[2]} "  # HEAD or GET
        before = registry_log.read_text().count(manifest_get)
        run = stackbuild(workspace, "build", "reftest-official")
        assert run.returncode == 0, run.stderr[-3000:]
        assert "smoke: launch: passed" in run.stderr
        assert registry_log.read_text().count(manifest_get) > before  # pulled from the registry, by digest

    plan = plan_of(workspace, "reftest-official")
    toolkit = plan.stages["toolkit"].dockerfile
    assert "preinstalled in the base image" in toolkit and "COPY packages/" not in toolkit
    assert f"FROM {official}" in plan.stages["base-devel"].dockerfile
    runtime = plan.final_tags["runtime-image"]
    version = engine.run(runtime, ["bash", "-c", "cat $ASCEND_TOOLKIT_HOME/x86_64-linux/ascend_toolkit_install.info"])
    assert "version=8.5.0" in version.output
