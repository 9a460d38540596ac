"""The teammate's side of a tag: `stackbuild run` starts the reference image and its smoke passes."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator

from builder import lock
from builder.cli.configuration import cache_root
from builder.engine.docker_engine import DockerEngine
from builder.inputs import trees
from builder.inputs.path_source import LockedPath
from builder.store.cache import Cache
from tests.conftest import ROOT, TEST_PREFIX
from tests.docker.conftest import plan_of, stackbuild, touch, write_variant
from tests.helpers import registry

SMOKE = (
    "python3 -m harness.debug.launch_kernel --kernel-path /opt/stack/ascend-kernel/build/libascend_kernel.so "
    "--grid-dim 1,1,1 --block-dim 16,16,1 --shared-mem 0 --args float32,M,N,K,lda,ldb,ldc"
)


def test_run_starts_the_image_and_the_smoke_passes_in_it(workspace: Path) -> None:
    stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)
    image = plan_of(workspace, "reftest").final_tags["runtime-image"]
    run = stackbuild(workspace, "run", image, "--", "bash", "-c", SMOKE)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Kernel launch success!" in run.stdout
    assert "no NPU on this host" in run.stderr  # this machine has none: no device flags were given
    failing = stackbuild(workspace, "run", image, "--", "bash", "-c", "exit 7")
    assert failing.returncode == 7  # the container's exit code is the command's


def test_a_teammate_given_only_the_tag_smokes_and_runs_it_from_an_empty_directory(
    workspace: Path, tmp_path: Path
) -> None:
    """No checkout: the image carries its smoke command, and inspect ends with the line that runs it."""
    stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)
    image = plan_of(workspace, "reftest").final_tags["runtime-image"]
    empty = tmp_path / "elsewhere"
    empty.mkdir()

    def teammate(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "builder", *args],
            cwd=empty,
            capture_output=True,
            text=True,
            timeout=600,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )

    smoke = teammate("smoke", image)
    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    assert "Kernel launch success!" in smoke.stdout
    inspect = teammate("inspect", image)
    assert inspect.returncode == 0, inspect.stderr
    lines = inspect.stdout.strip().splitlines()
    assert all(len(line) <= 100 for line in lines), inspect.stdout
    start = next(n for n, line in enumerate(lines) if line.startswith(f"  stackbuild run {image}"))
    run_line = "\n".join(lines[start:]).replace("\\\n", " ")  # as a shell joins the lines it was given
    run = teammate(*shlex.split(run_line)[1:])
    assert run.returncode == 0 and "Kernel launch success!" in run.stdout, run.stdout + run.stderr
    assert not list(empty.iterdir())  # nothing written where the teammate stood


HARNESS_FILE = Path("stacks/reference/harness/harness/__init__.py")


def test_inspect_and_diff_name_the_one_component_that_moved(workspace: Path, engine: DockerEngine) -> None:
    stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)
    tag = plan_of(workspace, "reftest").final_tags["runtime-image"]
    first = engine.image_id(tag)
    assert first
    locked = lock.read(workspace / "lockfiles" / "reftest.lock.json")
    old = touch(workspace / HARNESS_FILE)
    try:
        rebuilt = stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)
        # Built from a tree the lock does not name: the same tags with -dirty, the clean ones untouched.
        assert f"{tag}-dirty" in rebuilt.stdout + rebuilt.stderr
        assert engine.image_id(tag) == first
        second = engine.image_id(f"{tag}-dirty")
        now = trees.tree_hash(workspace / HARNESS_FILE.parents[1])
    finally:
        (workspace / HARNESS_FILE).write_text(old)
    assert second and second != first

    about = json.loads(stackbuild(workspace, "inspect", first, "--json", check=True).stdout)
    assert about["stack"] == "reftest" and about["lock_sha256"] == locked.lock_sha256
    # The runtime image: the components with a part in it (the tilelang DSL and compiler are devel-only).
    assert list(about["components"]) == ["ascend-kernel", "runtime", "harness"]
    harness = locked.component("harness").source
    assert isinstance(harness, LockedPath)
    assert about["components"]["harness"]["tree_sha256"] == harness.tree_sha256
    assert about["certified_host"]["driver"] == "none" and about["variant"] == "runtime"
    installed = stackbuild(workspace, "run", first, "--", "dpkg-query", "-W", "-f", "${Package} ${Version}\\n")
    dpkg = dict(line.split(" ", 1) for line in installed.stdout.splitlines())
    assert about["system_packages"] and all(dpkg.get(n) == v for n, v in about["system_packages"].items())
    text = stackbuild(workspace, "inspect", first, check=True).stdout
    assert f"tree {harness.tree_sha256[:12]}" in text and "certified for driver none" in text

    changes = json.loads(stackbuild(workspace, "diff", first, second, "--json", check=True).stdout)
    assert changes == [
        {"kind": "component", "name": "harness", "field": "tree_sha256", "old": harness.tree_sha256, "new": now}
    ]
    diff = stackbuild(workspace, "diff", first, second, "--exit-code")
    assert diff.returncode == 1
    assert diff.stdout.strip() == f"component harness: tree_sha256 {harness.tree_sha256} -> {now}"


def latest_runs_use() -> set[str]:
    """The stage tags the newest build of each stack and architecture used, read from the records."""
    used: set[str] = set()
    runs = Cache(cache_root(os.environ)).root / "records" / "runs"
    for arch_dir in {path.parent for path in runs.rglob("*.json")}:
        newest = max(arch_dir.glob("*.json"), key=lambda path: int(path.stem.split("-")[0]))
        used |= set(json.loads(newest.read_text())["stages"].values())
    return used


def test_gc_removes_exactly_what_no_recent_build_used(workspace: Path, engine: DockerEngine) -> None:
    # Two edits no other build makes: the first one's harness and finals no other stack uses either.
    old = touch(workspace / HARNESS_FILE)
    try:
        stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)
        before = {s.tag() for s in plan_of(workspace, "reftest").order()}
        planted = f"{TEST_PREFIX}/stage/planted:" + "0" * 64  # an image no build names
        engine.tag(engine.image_id(plan_of(workspace, "reftest").stages["base-runtime"].tag()) or "", planted)
        blobs = sorted(Cache(cache_root(os.environ)).blob_files())
        touch(workspace / HARNESS_FILE)
        stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)
        after = {s.tag() for s in plan_of(workspace, "reftest").order()}
        assert len(before - after) == 3  # harness and both finals
        every = engine.tags(f"{TEST_PREFIX}/stage/*") | engine.tags(f"{TEST_PREFIX}/pending/*")
        failed = engine.tags(f"{TEST_PREFIX}/failed/*")  # shell's states: they go once their stage moved on
        # The planted image was tagged just now and no record of this cache names it: another cache's build?
        careful = stackbuild(workspace, "gc", "--dry-run", "--keep", "1", check=True)
        assert planted not in careful.stdout and "tagged in the last 24 h" in careful.stderr, careful.stderr
        assert time.time() - (engine.inspect(planted).tagged_at or 0) < 600
        dry = stackbuild(workspace, "gc", "--dry-run", "--keep", "1", "--include-recent", check=True)
        # Images only: what killed processes left in cache/tmp is listed too (as paths).
        listed = set(re.findall(rf"^would remove ({TEST_PREFIX}/\S+)  \(", dry.stdout, re.M))
        used = latest_runs_use()
        assert listed - failed == every - used
        keys = {tag.rpartition(":")[2] for tag in used}
        assert listed & failed == {tag for tag in failed if tag.rpartition(":")[2] not in keys}
        assert {planted, *(before - after)} <= listed and not listed & after
        assert all(engine.image_id(t) for t in listed)  # a dry run removes nothing

        run = stackbuild(workspace, "gc", "--keep", "1", "--include-recent", check=True)
        assert re.search(r"removed \d+ images and 0 inputs: freed \d+ MB", run.stderr)
        assert not any(engine.image_id(t) for t in listed)
        assert sorted(Cache(cache_root(os.environ)).blob_files()) == blobs  # cached inputs stay without --inputs
        again = stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)
        assert "[stackbuild] 0 built, 10 cached" in again.stderr
    finally:
        (workspace / HARNESS_FILE).write_text(old)


def test_doctor_on_this_machine_gives_each_verdict_and_knows_the_registry(workspace: Path, tmp_path: Path) -> None:
    run = stackbuild(workspace, "doctor", "reftest", "--json")
    document = json.loads(run.stdout)
    assert run.returncode == 0 and document["can_run"] is True, run.stdout
    checks = {c["name"]: c for c in document["checks"]}
    assert checks["engine"]["verdict"] == "ok" and "API 1." in checks["engine"]["detail"]
    assert checks["npu"]["detail"].startswith("no NPU on this host")
    assert checks["registry"]["verdict"] == "skip"
    # 8.5.0 is certified for driver 25.5.0: this machine has no NPU to run it on
    real = stackbuild(workspace, "doctor", str(ROOT / "stacks" / "8.5.0.yaml"))
    assert real.returncode == 1 and "fail  npu" in real.stdout and "fix: run 8.5.0 on an Ascend host" in real.stdout

    with registry(tmp_path / "registry", users={"ci": "pw"}) as address:
        site = tmp_path / "site.yaml"
        site.write_text(f"cache_registry: {address}/cache\n")
        refused = stackbuild(workspace, "--site-config", str(site), "doctor", "reftest")
        assert refused.returncode == 1 and f"fix: docker login {address}" in refused.stdout
        login = {"STACKBUILD_REGISTRY_USERNAME": "ci", "STACKBUILD_REGISTRY_PASSWORD": "pw"}
        taken = stackbuild(workspace, "--site-config", str(site), "doctor", "reftest", env=login)
        assert taken.returncode == 0 and f"ok    registry        {address}/cache answers" in taken.stdout


def test_shell_opens_a_failed_stage_before_its_failed_step_and_it_fails_again_there(workspace: Path) -> None:
    name = write_variant(
        workspace,
        "reftest-shell",
        [
            (
                "      - cmake -S . -B build -DCMAKE_BUILD_TYPE=Release",
                "      - env -u CMAKE_PREFIX_PATH cmake -S . -B build",
            )
        ],
    )
    stackbuild(workspace, "lock", name, check=True)
    failed = stackbuild(workspace, "build", name, "--no-smoke")
    assert failed.returncode == 1 and "stage runtime failed" in failed.stderr
    assert f"to look inside: stackbuild shell {name} runtime" in failed.stderr

    rerun = "/bin/bash /opt/stackbuild/steps/runtime/build.sh"
    shell = stackbuild(workspace, "shell", name, "runtime", "--", "bash", "-c", f'{rerun} 2>&1; echo "exit=$?"; pwd')
    assert shell.returncode == 0, shell.stderr
    assert f"the step that failed, to run again here: {rerun}" in shell.stderr
    assert 'Could not find a package configuration file provided by "ACL"' in shell.stdout
    assert "exit=1" in shell.stdout and shell.stdout.rstrip().endswith("/opt/stack/runtime")

    # A stage that built: its own image, with its environment.
    built = stackbuild(workspace, "shell", name, "toolkit", "--", "printenv", "ASCEND_TOOLKIT_HOME", check=True)
    assert built.stdout.strip().startswith("/usr/local/Ascend/")


def test_the_sbom_validates_and_lists_what_the_image_itself_reports(workspace: Path) -> None:
    stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)
    devel = plan_of(workspace, "reftest").final_tags["devel-image"]
    text = stackbuild(workspace, "sbom", devel, check=True).stdout
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    components = json.loads(text)["components"]
    locked = lock.read(workspace / "lockfiles" / "reftest.lock.json")
    trees = {c.id: c.source.tree_sha256 for c in locked.components if isinstance(c.source, LockedPath)}
    assert len(trees) == 5  # the Ascend C devkit is inside the toolkit package, not a component
    assert {c["name"]: c["version"] for c in components if c["bom-ref"].startswith("component:")} == trees

    # dpkg's own database, read as text: the packages whose status is "install ok installed"
    status = stackbuild(workspace, "run", devel, "--", "cat", "/var/lib/dpkg/status", check=True).stdout
    stanzas = [dict(re.findall(r"^(Package|Status|Version): (.*)$", block, re.M)) for block in status.split("\n\n")]
    installed = {s["Package"]: s["Version"] for s in stanzas if s.get("Status") == "install ok installed"}
    listed = {c["name"]: c["version"] for c in components if c.get("purl", "").startswith("pkg:deb/")}
    assert listed == installed and len(listed) > 100
    pip = stackbuild(workspace, "run", devel, "--", "python3", "-m", "pip", "list", "--format=json", check=True)
    python = {c["name"]: c["version"] for c in components if c.get("purl", "").startswith("pkg:pypi/")}
    assert python == {p["name"]: p["version"] for p in json.loads(pip.stdout)}
    assert {"simreport", "numpy", "harness-reference"} <= set(python)
