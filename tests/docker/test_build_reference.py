"""`stackbuild build` of the reference stack, end to end on the real engine."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from builder import manifest
from builder.engine import buildkit
from builder.engine.docker_engine import DockerEngine
from builder.model.arch import Arch
from builder.verify import smoke
from tests.conftest import ROOT, TEST_PREFIX
from tests.docker.conftest import plan_of, stackbuild, touch, write_variant

# The reference stack's own smoke command, run by hand in the image.
SMOKE = ["bash", "-c", manifest.load(ROOT / "stacks" / "reference.yaml").smoke.command]


def tags_of(stdout: str) -> dict[str, str]:
    tags = {}
    for line in stdout.splitlines():
        tag = line.split()[0]
        tags["runtime" if "-runtime-" in tag else "devel"] = tag
    return tags


def states(stderr: str) -> dict[str, str]:
    """Last reported state of each stage (plain progress lines)."""
    found = {}
    for match in re.finditer(
        r"^\[stackbuild\] ([\w.-]+): (cached|built|building|failed|skipped|probing)", stderr, re.M
    ):
        found[match.group(1)] = match.group(2)
    return found


def plan(root: Path) -> dict[str, dict[str, str]]:
    out = stackbuild(root, "plan", "reftest", "--json", check=True).stdout
    return {row["stage"]: row for row in json.loads(out)["stages"]}


def test_lock_check_passes(workspace: Path) -> None:
    run = stackbuild(workspace, "lock", "--check", "reftest")
    assert run.returncode == 0, run.stderr
    assert "up to date" in run.stdout


def test_build_of_a_stack_without_a_lock_locks_it_first(workspace: Path) -> None:
    name = write_variant(workspace, "reftest-nolock", [])
    run = stackbuild(workspace, "build", name, "--no-smoke")
    assert run.returncode == 0, run.stderr[-3000:]
    assert (
        f"[stackbuild] {name} has no lock: locking it first (`stackbuild lock {name} --arch {Arch.host()}`)"
        in run.stderr
    )
    assert (workspace / "lockfiles" / f"{name}.lock.json").is_file()
    assert stackbuild(workspace, "lock", "--check", name).returncode == 0
    assert f"{TEST_PREFIX}/{name}:8.5.0-910b-debian12-py3.11-{Arch.host()}" in run.stdout


def test_build_prints_tags_runs_and_runtime_is_small(workspace: Path, engine: DockerEngine) -> None:
    run = stackbuild(workspace, "build", "reftest")
    assert run.returncode == 0, run.stderr[-3000:]
    tags = tags_of(run.stdout)
    assert tags == {
        "runtime": f"{TEST_PREFIX}/reftest:8.5.0-910b-debian12-py3.11-runtime-{Arch.host()}",
        "devel": f"{TEST_PREFIX}/reftest:8.5.0-910b-debian12-py3.11-{Arch.host()}",
    }
    assert "smoke: launch: passed" in run.stderr
    result = engine.run(tags["runtime"], SMOKE)
    assert result.exit_code == 0, result.output
    assert "[INFO] Kernel launch success! Elapsed time:" in result.output
    assert engine.inspect(tags["runtime"]).size * 2 <= engine.inspect(tags["devel"]).size
    labels = engine.inspect(tags["runtime"]).labels
    assert labels["org.stackbuild.stage"] == "runtime-image"
    assert json.loads(labels["org.stackbuild.inputs"])["platform"] == "linux/amd64"


def test_second_build_is_all_cached(workspace: Path) -> None:
    stackbuild(workspace, "build", "reftest", check=True)
    run = stackbuild(workspace, "build", "reftest", check=True)
    assert set(states(run.stderr).values()) == {"cached"}
    assert "[stackbuild] 0 built, 10 cached" in run.stderr
    assert all(row["status"] == "cached" for row in plan(workspace).values())


def test_touching_harness_rebuilds_harness_and_finals(workspace: Path) -> None:
    stackbuild(workspace, "build", "reftest", check=True)
    source = workspace / "stacks" / "reference" / "harness" / "harness" / "__init__.py"
    old = touch(source)
    try:
        rows = plan(workspace)
        to_build = {name for name, row in rows.items() if row["status"] == "build"}
        assert to_build == {"harness", "devel-image", "runtime-image"}
        assert re.fullmatch(r"harness: source tree [0-9a-f]{12} -> [0-9a-f]{12}", rows["harness"]["why"])
        assert rows["devel-image"]["why"] == "devel-image: parent harness rebuilt"
        run = stackbuild(workspace, "build", "reftest", check=True)
        built = {name for name, state in states(run.stderr).items() if state == "built"}
        assert built == {"harness", "devel-image", "runtime-image"}
    finally:
        source.write_text(old)


def test_a_stage_built_on_its_parents_as_built_is_the_image_built_on_them_normalised(
    workspace: Path, engine: DockerEngine
) -> None:
    """Children start on their parents' images as built, while those are normalised, and are put over
    the normalised ones (the toolkit's are its layers as built): the same image ids as when built on
    their parents normalised (tagged before the run). Rebuilt in turn, BuildKit's cache emptied
    before each: every stage but the bases (the components FROM the toolkit as built, copying from
    each other as built), the components (on the toolkit normalised), the harness and the finals
    (the harness copying from the other components normalised), the finals alone (copying from them
    all normalised)."""
    stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)
    stages = plan_of(workspace, "reftest").order()
    rebuilt = [s for s in stages if s.kind != "base"]
    components = [s for s in rebuilt if s.kind != "toolkit"]
    finals = [s for s in stages if s.name in ("devel-image", "runtime-image")]
    harness = [s for s in stages if s.name == "harness"]
    ids: dict[str, list[str | None]] = {s.name: [] for s in components}
    logs = workspace / ".stackbuild" / "logs" / "reftest" / Arch.host().value
    for removed in (rebuilt, components, harness + finals, finals):
        for stage in removed:
            engine.remove(stage.tag())
        _empty_buildkit_cache()
        run = stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)
        assert {n for n, state in states(run.stderr).items() if state == "built"} == {s.name for s in removed}
        for stage in components:
            ids[stage.name].append(engine.image_id(stage.tag()))
        if removed is rebuilt:
            first_log, toolkit_log = (logs / "tilelang.log").read_text(), (logs / "toolkit.log").read_text()
    assert {name: len(set(found)) for name, found in ids.items()} == dict.fromkeys(ids, 1), ids
    # The toolkit's layers are canonical as built and kept: its normalised image has the layers the
    # components were built on, so none is put over another (were they rewritten, each would be).
    # Its own layers: one a package it installs (toolkit, ops), one the compile cache's compiler
    # wrappers (the reference stack names one), one its version check.
    locked = json.loads((workspace / "lockfiles" / "reftest.lock.json").read_text())
    n = len(locked["architectures"][Arch.host().value]["packages"]) + 2
    kept = rf"^# normalised to \S+ in \S+ from the data root, {n} of {n} own layer\(s\) held \({n} canonical as built\)"
    assert re.search(kept, toolkit_log, re.M), toolkit_log
    over = r"^# normalised to \S+ in \S+ from the data root, over its parent as normalised"
    assert not re.search(over, first_log, re.M), first_log


def _empty_buildkit_cache() -> None:
    """BuildKit's cache emptied: the next build runs every step again."""
    prune = subprocess.run([str(buildkit.find_cli()), "builder", "prune", "-af"], capture_output=True, text=True)
    assert prune.returncode == 0, prune.stderr


def test_children_put_over_a_toolkit_rewritten_by_normalising_are_the_images_built_on_it_normalised(
    workspace: Path, engine: DockerEngine
) -> None:
    """A toolkit whose layer is not canonical as built (a file of another owner than root: Docker 20.10
    names it from its host's /etc/passwd, the canonical tar does not; the test checks that premise,
    the toolkit rewritten, before relying on it) is rewritten. The components start on it as built
    (an owner's name is nothing a build sees) and are put over it normalised: the same image ids as
    when built on the normalised toolkit, BuildKit's cache emptied in between."""
    reference = workspace / "stacks" / "reference"
    shutil.copytree(reference / "toolkit", reference / "toolkit-owned", ignore=shutil.ignore_patterns("__pycache__"))
    install = reference / "toolkit-owned" / "payload" / "install.sh"
    install.write_text(install.read_text() + '\ntouch "$dest/owned-by-daemon" && chown 1:1 "$dest/owned-by-daemon"\n')
    name = write_variant(workspace, "reftest-owned", [("reference/toolkit/pack.py", "reference/toolkit-owned/pack.py")])
    stackbuild(workspace, "lock", name, check=True)
    stages = plan_of(workspace, name).order()
    for stage in stages:  # what an earlier run left: this one builds the toolkit and all above it
        if stage.kind != "base":
            engine.remove(stage.tag())
    stackbuild(workspace, "build", name, "--no-smoke", check=True)
    components = [s for s in stages if s.kind == "component"]
    logs = workspace / ".stackbuild" / "logs" / name / Arch.host().value
    normalised = re.search(r"^# normalised to (\S+) .* \(was (\S+)\)$", (logs / "toolkit.log").read_text(), re.M)
    assert normalised and normalised[1] != normalised[2]  # its image was rewritten
    over = r"^# normalised to \S+ .*, over its parent as normalised"
    put_over = [s.name for s in components if re.search(over, (logs / f"{s.name}.log").read_text(), re.M)]
    assert put_over, "no component was built on the toolkit as built"
    # Both finals too: with them tagged, nothing asks for the components.
    rebuilt = [s for s in stages if s.kind not in ("base", "toolkit")]
    first = {s.name: engine.image_id(s.tag()) for s in rebuilt}
    for stage in rebuilt:
        engine.remove(stage.tag())
    _empty_buildkit_cache()
    run = stackbuild(workspace, "build", name, "--no-smoke", check=True)
    assert {n for n, state in states(run.stderr).items() if state == "built"} == set(first)
    assert {s.name: engine.image_id(s.tag()) for s in rebuilt} == first


def test_the_classic_builder_builds_what_buildkit_builds(workspace: Path, engine: DockerEngine) -> None:
    """docker-py's classic builder, for engines whose docker CLI has no BuildKit: the same stages
    (one rebuilt here by each builder), the same probes, the same tree in the devel image. On the pre-8.5
    layout: from 8.5.0 the runtime image bind-mounts the installers as the toolkit stage does, which the
    classic builder cannot build (test_the_classic_builder_names_what_it_cannot_build)."""
    stack = "reference-8.3"
    shutil.copy(ROOT / "stacks" / f"{stack}.yaml", workspace / "stacks" / f"{stack}.yaml")
    stackbuild(workspace, "lock", stack, "--arch", str(Arch.host()), check=True)
    stackbuild(workspace, "build", stack, check=True)
    source = workspace / "stacks" / "reference" / "harness" / "harness" / "__init__.py"
    old = touch(source)
    # Bytecode is left out: pip stamps .pyc files with the install time (any two builds differ there).
    digest = "cd /opt/stack && find . -type f ! -name '*.pyc' -print0 | sort -z | xargs -0 sha256sum | sha256sum"
    trees = {}
    try:
        for builder in ("classic", "buildkit"):
            for tag in [plan_of(workspace, stack).stages[s].tag() for s in ("harness", "devel-image")]:
                engine.remove(tag)
            run = stackbuild(workspace, "build", stack, env={"STACKBUILD_BUILDER": builder})
            assert run.returncode == 0, run.stderr[-3000:]
            assert states(run.stderr)["harness"] == "built" and "smoke: launch: passed" in run.stderr
            devel = plan_of(workspace, stack).final_tags["devel-image"]
            trees[builder] = engine.run(devel, ["sh", "-c", digest]).output
    finally:
        source.write_text(old)
    assert trees["classic"] == trees["buildkit"]


def test_the_classic_builder_names_what_it_cannot_build(workspace: Path, engine: DockerEngine) -> None:
    """From 8.5.0 the runtime image installs CANN's runtime subset from bind-mounted installers: the
    classic builder stops there, and says how to go on."""
    stackbuild(workspace, "build", "reftest", check=True)
    engine.remove(plan_of(workspace, "reftest").stages["runtime-image"].tag())
    run = stackbuild(workspace, "build", "reftest", env={"STACKBUILD_BUILDER": "classic"})
    assert run.returncode == 1, run.stderr[-3000:]
    assert "stage runtime-image failed: the --mount option requires BuildKit" in run.stderr
    assert "from CANN 8.5.0, the runtime image bind-mount" in run.stderr and "STACKBUILD_BUILDER=buildkit" in run.stderr


def test_touching_the_bottom_component_rebuilds_everything_downstream(workspace: Path) -> None:
    """tilelang, the first component on the toolkit (the Ascend C devkit is inside the toolkit package)."""
    stackbuild(workspace, "build", "reftest", check=True)
    source = workspace / "stacks" / "reference" / "tilelang" / "tilelang" / "parser.py"
    old = touch(source)
    try:
        rows = plan(workspace)
        downstream = {"tilelang", "tilelang-compiler", "ascend-kernel", "harness", "devel-image", "runtime-image"}
        assert {name for name, row in rows.items() if row["status"] == "build"} == downstream
        assert rows["tilelang"]["why"].startswith("tilelang: source tree ")
        assert rows["tilelang-compiler"]["why"] == "tilelang-compiler: parent tilelang rebuilt"
        assert "parent" in rows["harness"]["why"] and "tilelang" in rows["harness"]["why"]
        for unaffected in ("base-devel", "toolkit", "runtime"):
            assert rows[unaffected]["status"] == "cached"
        run = stackbuild(workspace, "build", "reftest", check=True)
        assert {n for n, s in states(run.stderr).items() if s == "built"} == downstream
    finally:
        source.write_text(old)


def test_real_stack_smoke_without_npu_is_skipped_not_passed(workspace: Path) -> None:
    if smoke.npu_devices(Path("/")):
        pytest.skip("this host has an NPU: the launch itself runs here, not the no-device path")
    stackbuild(workspace, "build", "reftest", check=True)
    image = f"{TEST_PREFIX}/reftest:8.5.0-910b-debian12-py3.11-{Arch.host()}"
    run = stackbuild(ROOT, "smoke", image, "--stack", "8.5.0")
    assert run.returncode == 0, run.stderr
    assert "smoke: launch: skipped (no NPU device on this host); static checks passed" in run.stderr
    assert "launch: passed" not in run.stderr
