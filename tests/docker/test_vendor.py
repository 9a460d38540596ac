"""Air-gap bundles: `vendor` writes what a build needs, `import` fills an empty cache from it, and a
build on an empty engine succeeds with every git source moved away and every URL rewritten to a
dead address: all inputs came from the bundle."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.docker.conftest import SecondDaemon, stackbuild, write_variant
from tests.helpers import http_server, lib_with_submodule, serving_bytes

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(os.geteuid() != 0, reason="starting a second Docker daemon needs root"),
]
DEAD = "http://127.0.0.1:9/dead/"  # the discard port: nothing answers there


def test_a_bundle_builds_with_the_network_to_every_source_cut(workspace: Path, tmp_path: Path) -> None:
    repos = lib_with_submodule(tmp_path)
    payload = b"a third-party archive the build script would download\n"
    with http_server(serving_bytes(lambda: payload)) as server:
        # A pinned download (fetch:) the build reads offline: stages build with --network none.
        component = (
            "  - id: gitdemo\n"
            f"    source: {{git: 'file://{repos}/lib.git', ref: main}}\n"
            f"    fetch: [{{url: '{server}/dep-1.0.tar', to: third_party/dep-1.0.tar}}]\n"
            "    build: ['cat README 3rdparty/dep/README third_party/dep-1.0.tar > both.txt']\n"
            "    artifacts: [{path: both.txt, runtime: true}]\n"
        )
        name = write_variant(workspace, "reftest-vendor", [("components:\n", "components:\n" + component)])
        stackbuild(workspace, "lock", name, "--arch", "x86_64", check=True)

        bundle = tmp_path / "bundle"
        made = stackbuild(workspace, "vendor", name, "--arch", "x86_64", "-o", str(bundle))
    assert made.returncode == 0, made.stderr[-3000:]
    manifest = json.loads((bundle / "bundle.json").read_text())
    assert {g["url"] for g in manifest["git"]} == {f"file://{repos}/lib.git", f"file://{repos}/dep.git"}
    kinds = " ".join(f.get("what", "") for f in manifest["files"].values())
    for expected in ("rootfs.tar", "Ascend-cann-toolkit", ".deb", ".whl", "gitdemo: src/third_party/dep-1.0.tar"):
        assert expected in kinds, kinds
    # The signed zip the lock pins is carried (the target verifies it again), not the .run made from it.
    locked = json.loads((workspace / "lockfiles" / f"{name}.lock.json").read_text())
    zipped = locked["architectures"]["x86_64"]["packages"][0]
    assert zipped["file"].endswith(".zip") and f"blobs/{zipped['sha256']}" in manifest["files"]

    # A damaged bundle is refused naming the file, and nothing of it enters the cache.
    damaged = tmp_path / "damaged"
    shutil.copytree(bundle, damaged)
    victim = next(n for n, f in manifest["files"].items() if n.startswith("blobs/") and ".deb" in f["what"])
    (damaged / victim).write_bytes(b"not the file")
    empty = tmp_path / "cache-damaged"
    bad = stackbuild(workspace, "import", str(damaged), env={"STACKBUILD_CACHE": str(empty)})
    assert (
        bad.returncode != 0
        and f"{damaged / victim}: not the " in bad.stderr
        and "the bundle is damaged" in bad.stderr
        # (the cache makes its blob directory with its first file: the victim may come first in the bundle)
        and not (empty / "blobs" / "sha256" / victim.split("/")[1]).exists()
    )

    # The air-gapped machine: its own cache and engine, the repositories gone, every source rewritten dead.
    shutil.move(repos, tmp_path / "repos-gone")
    site = tmp_path / "site.yaml"
    rewrites = [f"file://{repos}/", "http://deb.debian.org/", "https://deb.debian.org/", f"{server}/"]
    site.write_text("url_rewrites:\n" + "".join(f"  - {{from: '{u}', to: '{DEAD}'}}\n" for u in rewrites))
    env = {"STACKBUILD_CACHE": str(tmp_path / "cache-b"), "STACKBUILD_SITE_CONFIG": str(site)}
    imported = stackbuild(workspace, "import", str(bundle), env=env)
    assert imported.returncode == 0, imported.stderr[-3000:]
    daemon = SecondDaemon(Path(tempfile.mkdtemp(prefix="sb-v-", dir="/tmp")))
    daemon.start()
    try:
        run = stackbuild(workspace, "build", name, "--arch", "x86_64", env={**env, "DOCKER_HOST": daemon.host})
        assert run.returncode == 0, run.stderr[-3000:]
        assert "0 cached" in run.stderr and "smoke: launch: passed" in run.stderr
        tag = next(line.split()[0] for line in run.stdout.splitlines() if "-runtime-" in line)
        shown = subprocess.run(
            ["docker", "run", "--rm", tag, "cat", "/opt/stack/gitdemo/both.txt"],
            capture_output=True,
            env={**os.environ, "DOCKER_HOST": daemon.host},
        )
        assert shown.stdout.endswith(payload), shown
    finally:
        daemon.remove()
        shutil.rmtree(daemon.base, ignore_errors=True)
