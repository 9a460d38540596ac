"""Two architectures, one tag: a small stack (tests/emu) locked for x86_64 and aarch64, built for
both (aarch64 under qemu user emulation), smoke-tested on each, and published as one OCI index per
tag to a real registry on loopback; `docker pull` of the tag for arm64 gives the aarch64 image.

The small stack keeps CI within its time (its minimal bases bootstrap in minutes under
emulation); the full reference stack for aarch64 is measured outside CI (docs/development.md)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from builder import lock
from builder.engine.docker_engine import DockerEngine
from builder.engine.registry_api import OCI_INDEX, OCI_MANIFEST
from builder.model.arch import Arch
from tests.docker.conftest import emu_workspace, stackbuild
from tests.helpers import CYCLONEDX, IN_TOTO, registry, registry_get

EMULATION = subprocess.run(["sh", "-c", "command -v arch-test && arch-test arm64"], capture_output=True).returncode == 0
pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(
        Arch.host() is not Arch.X86_64 or not EMULATION,
        reason="needs an x86_64 host with arm64 emulation (python -m builder.hostsetup --foreign aarch64)",
    ),
]
RELEASE = "8.3.rc1-910b-debian12-py3.11"


def test_a_two_architecture_publish_is_one_index_and_the_aarch64_image_runs(
    tmp_path: Path, engine: DockerEngine
) -> None:
    root = emu_workspace(tmp_path, ("x86_64", "aarch64"))
    locked = lock.read(root / "lockfiles" / "emu.lock.json")
    assert set(locked.architectures) == {Arch.X86_64, Arch.AARCH64}  # one lock holds both
    with registry(tmp_path / "registry") as address:
        run = stackbuild(root, "publish", "emu", "--registry", f"{address}/team", timeout=2400)
        assert run.returncode == 0, run.stderr[-3000:]
        # Each architecture smoke-tested on itself: the aarch64 image under emulation.
        assert "launch: passed" in run.stderr and run.stderr.count("smoke: launch: passed") == 2, run.stderr[-3000:]
        repository = f"{address}/team/emu"
        raw = subprocess.run(
            ["skopeo", "inspect", "--tls-verify=false", "--raw", f"docker://{repository}:{RELEASE}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        platforms = sorted((m["platform"] for m in json.loads(raw)["manifests"]), key=lambda p: p["architecture"])
        assert platforms == [
            {"architecture": "amd64", "os": "linux"},
            {"architecture": "arm64", "os": "linux", "variant": "v8"},
        ]
        # Each image manifest of each index has its SBOM and its provenance as referrers; the aarch64
        # image's SBOM was read from that image (dpkg-query under emulation): arm64 packages.
        for tag in (RELEASE, f"{RELEASE}-runtime"):
            index = json.loads(registry_get(address, f"team/emu/manifests/{tag}", OCI_INDEX) or b"{}")
            for image in index["manifests"]:
                found = registry_get(address, f"team/emu/manifests/{image['digest'].replace(':', '-')}", OCI_INDEX)
                assert found is not None, f"no referrers of {tag}'s {image['platform']['architecture']} image"
                referrers = {r["artifactType"]: r["digest"] for r in json.loads(found)["manifests"]}
                assert sorted(referrers) == [CYCLONEDX, IN_TOTO]
                artifact = json.loads(
                    registry_get(address, f"team/emu/manifests/{referrers[CYCLONEDX]}", OCI_MANIFEST) or b""
                )
                sbom = json.loads(
                    registry_get(address, f"team/emu/blobs/{artifact['layers'][0]['digest']}", "*/*") or b""
                )
                arch = {"amd64": "x86_64", "arm64": "aarch64"}[image["platform"]["architecture"]]
                about = {p["name"]: p["value"] for p in sbom["metadata"]["component"]["properties"]}
                assert about["stackbuild:arch"] == arch
                debs = [c["purl"] for c in sbom["components"] if c.get("purl", "").startswith("pkg:deb/")]
                wanted = "arch=" + image["platform"]["architecture"]
                assert debs and all(wanted in purl or "arch=all" in purl for purl in debs), debs[:5]
        runtime = f"{repository}:{RELEASE}-runtime"
        pulled = engine.pull(runtime, Arch.AARCH64)
        assert pulled is not None
        try:
            machine = engine.run(runtime, ["python3", "/opt/stack/hello/launch.py"]).output
            assert "Kernel launch success! on aarch64" in machine
        finally:
            engine.remove(runtime)
