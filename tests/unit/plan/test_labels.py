"""What the final images say about themselves: OCI labels from the lock and the manifest's checkout,
and the lock itself copied in."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from builder.execute import chain
from builder.execute.chain import Request
from builder.execute.stage import StageRunner
from builder.inputs.path_source import LockedPath
from builder.inputs.project import Origin, origin_of
from builder.inputs.site import SiteConfig
from builder.lock import io as lock_io
from builder.manifest import load
from builder.model.arch import Arch
from builder.plan import render
from builder.plan.labels import LOCK_IN_IMAGE, as_built, image_labels
from builder.plan.plan_model import Plan
from builder.plan.why import record_build, why
from builder.store.cache import Cache
from tests.conftest import ROOT
from tests.fake_engine import FakeEngine
from tests.golden_plan import golden_plan, golden_request


def git(directory: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(directory), *args], capture_output=True, text=True, check=True).stdout


def test_the_origin_is_the_checkout_without_its_credentials(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    git(tmp_path, "remote", "add", "origin", "https://ci:s3cret@git.example.com/team/stacks.git?token=t0k")
    (tmp_path / "a").write_text("a")
    git(tmp_path, "add", "a")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a")
    (tmp_path / "stacks").mkdir()
    origin = origin_of(tmp_path / "stacks")
    assert origin.source == "https://git.example.com/team/stacks.git?<redacted>"
    assert origin.revision == git(tmp_path, "rev-parse", "HEAD").strip()
    assert origin_of(Path("/")) == Origin()  # not a checkout: no labels, no error


def test_labels_name_the_release_the_lock_and_each_component() -> None:
    request = golden_request()
    labels = image_labels(request.manifest, request.lock, Arch.X86_64, devel=True)
    assert labels["org.opencontainers.image.title"] == "golden devel image"
    # The devel image is named as the official full image is; the runtime image is -runtime.
    assert labels["org.opencontainers.image.version"] == "8.5.0-910b-ubuntu22.04-py3.11"
    runtime = image_labels(request.manifest, request.lock, Arch.X86_64, devel=False)
    assert runtime["org.opencontainers.image.version"] == "8.5.0-910b-ubuntu22.04-py3.11-runtime"
    assert labels["org.stackbuild.lock.sha256"] == request.lock.lock_sha256
    assert labels["org.stackbuild.component.kernels"] == f"https://github.com/hicann/catlass.git@{'2' * 40}"
    # The golden stack starts from an image base; its lock predates the field and reads the default date.
    assert labels["org.opencontainers.image.created"] == "2024-01-01T00:00:00Z"
    assert labels["org.stackbuild.arch"] == "x86_64"
    assert labels["org.stackbuild.host.driver"] == request.manifest.host.driver
    smoke = request.manifest.smoke
    assert (labels["org.stackbuild.smoke.command"], labels["org.stackbuild.smoke.expect"]) == (
        smoke.command,
        smoke.expect,
    )
    assert labels["org.stackbuild.smoke.needs-device"] == ("true" if smoke.needs_device else "false")


def test_the_carried_lock_names_the_trees_that_were_built() -> None:
    locked = lock_io.read(ROOT / "lockfiles" / "reference.lock.json")
    same = {c.id: c.source.tree_sha256 for c in locked.components if isinstance(c.source, LockedPath)}
    assert as_built(locked, same) is locked  # nothing moved: the lock file itself
    moved = as_built(locked, {**same, "harness": "f" * 64})
    assert [c.id for c in moved.components if c != locked.component(c.id)] == ["harness"]
    assert moved.component("harness").source == LockedPath(path="reference/harness", tree_sha256="f" * 64)
    assert moved.lock_sha256 == moved.content_sha256() != locked.lock_sha256


def test_nothing_of_the_checkout_reaches_an_image(tmp_path: Path) -> None:
    """The final images' labels and Dockerfiles follow from the lock alone: no origin, no commit
    (those are the build's provenance), so another clone at another commit gives the same bytes."""
    plan = golden_plan()
    runner = StageRunner(plan, FakeEngine(), Cache(tmp_path / "cache"), tmp_path / "logs")
    for stage in plan.stages.values():
        labels = runner.labels(stage)
        assert not [
            k for k in labels if k.startswith("org.opencontainers.image.") and k.endswith(("source", "revision"))
        ]
        assert "image.source" not in stage.dockerfile and "image.revision" not in stage.dockerfile


def test_label_values_cannot_leave_their_quotes_or_expand_variables() -> None:
    text = render.about({"org.x": 'a"b\nc $HOME ${PATH}'}, "stack.lock.json", LOCK_IN_IMAGE)
    assert text.splitlines()[-1] == 'LABEL org.x="a\\"b\\nc \\$HOME \\${PATH}"'


def test_both_final_images_carry_the_lockfile_and_their_labels() -> None:
    plan = golden_plan()
    lock_text = (Path(__file__).parents[2] / "golden" / "golden.lock.json").read_text()
    for final in ("devel-image", "runtime-image"):
        stage = plan.stages[final]
        assert dict(stage.files)["stack.lock.json"] == lock_text
        assert f'COPY ["stack.lock.json", "{LOCK_IN_IMAGE}"]' in stage.dockerfile
        assert 'LABEL org.opencontainers.image.title="golden ' in stage.dockerfile


def test_images_built_from_a_tree_that_differs_from_the_lock_are_tagged_dirty_and_only_tagged(tmp_path: Path) -> None:
    """A clean tree gives the release tags; an edited harness gives the same tags ending in -dirty,
    and the images' Dockerfiles differ only by the tree the carried lock names, never by a mark."""
    shutil.copytree(ROOT / "stacks", tmp_path / "stacks", ignore=shutil.ignore_patterns("build", "__pycache__"))
    manifest_path = tmp_path / "stacks" / "reference.yaml"
    lock = lock_io.read(ROOT / "lockfiles" / "reference.lock.json")

    def planned() -> Plan:
        request = Request(load(manifest_path), manifest_path, lock, SiteConfig(), Cache(tmp_path / "c"), Arch.X86_64)
        return chain.plan(request, lambda _: None)

    clean = planned()
    assert all(not tag.endswith("-dirty") for tag in clean.final_tags.values()), clean.final_tags
    with (tmp_path / "stacks" / "reference" / "harness" / "harness" / "__init__.py").open("a") as edited:
        edited.write("# an edit not locked\n")
    dirty = planned()
    assert dirty.final_tags == {final: f"{tag}-dirty" for final, tag in clean.final_tags.items()}
    assert "dirty" not in dirty.stages["runtime-image"].dockerfile
    # plan's note says how, in short digests that fit a line of 100 columns
    [note] = dirty.drift
    found = re.fullmatch(r"harness: source tree ([0-9a-f]{12}) \(locked\) -> ([0-9a-f]{12}) \(working tree\)", note)
    assert found, note
    # and plan's reason for the rebuild names the same two trees (the context adds the wheels to them)
    cache = Cache(tmp_path / "c")
    record_build(cache, clean, clean.stages["harness"])
    assert why(cache, dirty, dirty.stages["harness"]) == f"harness: source tree {found[1]} -> {found[2]}"
