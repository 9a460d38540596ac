"""inspect, diff and gc over an in-memory engine: what an image holds, what differs, what goes."""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from builder.cli import locking, vendoring
from builder.cli.context import Context
from builder.execute.history import BUILDS_LOCK, build_runs, record_run, running_build
from builder.execute.stage_checks import LISTINGS
from builder.execute.stage_normalise import REWRITES
from builder.handoff.compare import Change, compare
from builder.handoff.contents import handing_over, read_contents, run_lines, summary
from builder.handoff.gc import collect, find_garbage, lying_blobs, no_build_running, stale_records
from builder.inputs.path_source import LockedPath
from builder.lock import io as lock_io
from builder.lock.locked import Lock
from builder.manifest import load
from builder.model.arch import Arch
from builder.model.errors import StackbuildError
from builder.plan.labels import LOCK_IN_IMAGE, as_built, image_labels
from builder.plan.plan_model import ContextInput, Plan
from builder.store.cache import Cache
from tests.conftest import ROOT, TEST_PREFIX
from tests.fake_engine import FakeEngine
from tests.golden_plan import golden_plan, golden_request
from tests.helpers import run_cli

REFERENCE = lock_io.read(ROOT / "lockfiles" / "reference.lock.json")
REFERENCE_MANIFEST = load(ROOT / "stacks" / "reference.yaml")
# What the reference runtime image holds: the tilelang DSL and compiler reach only the devel image
# (the Ascend C devkit is the toolkit's, not a component).
IN_RUNTIME = ["ascend-kernel", "runtime", "harness"]


def holding(engine: FakeEngine, image: str, lock: Lock, devel: bool = False) -> None:
    """An image carrying lock, labelled as the runtime (or devel) image of the reference stack is."""
    engine.image_files[image] = {LOCK_IN_IMAGE: lock_io.text(lock).encode()}
    engine.image_labels[image] = image_labels(REFERENCE_MANIFEST, lock, Arch.X86_64, devel=devel)


def test_inspect_names_the_stack_its_packages_components_and_certified_host() -> None:
    engine = FakeEngine()
    holding(engine, "img", REFERENCE)
    about = read_contents(engine, "img", Arch.X86_64).describe()
    assert about["stack"] == "reference" and about["lock_sha256"] == REFERENCE.lock_sha256
    assert about["variant"] == "runtime" and about["arch"] == "x86_64"
    assert list(about["components"]) == IN_RUNTIME
    assert [cid for cid in REFERENCE.order if REFERENCE_MANIFEST.component(cid).reaches_runtime] == IN_RUNTIME
    harness = REFERENCE.component("harness").source
    assert isinstance(harness, LockedPath)
    assert about["components"]["harness"] == {"path": harness.path, "tree_sha256": harness.tree_sha256}
    toolkit = REFERENCE.package(Arch.X86_64, "toolkit")
    assert toolkit is not None
    assert about["toolkit"]["packages"]["toolkit"] == {"file": toolkit.file, "sha256": toolkit.sha256}
    assert about["certified_host"]["driver"] == REFERENCE_MANIFEST.host.driver
    section = REFERENCE.section(Arch.X86_64)
    assert about["base"]["tarball_sha256"] == section.base["runtime"].sha256
    assert {d.name for d in section.system.runtime} <= set(about["system_packages"])


def test_each_image_lists_the_components_and_python_packages_it_holds_and_how_to_run_it() -> None:
    """The runtime image names the four components that reach it; the devel image all six. Both carry
    the stack's smoke command, and inspect ends with the commands that run them, no checkout needed."""
    engine = FakeEngine()
    holding(engine, "rt", REFERENCE)
    holding(engine, "dev", REFERENCE, devel=True)
    runtime, devel = read_contents(engine, "rt", Arch.X86_64), read_contents(engine, "dev", Arch.X86_64)
    assert runtime.component_ids() == IN_RUNTIME and devel.component_ids() == list(REFERENCE.order)
    wheels = REFERENCE.section(Arch.X86_64).python
    assert runtime.python_packages() == {w.name: w.version for cid in IN_RUNTIME for w in wheels.get(cid, [])}
    assert runtime.smoke() == devel.smoke() == REFERENCE_MANIFEST.smoke
    lines = summary(runtime) + handing_over(runtime)
    start = lines.index("to run it     on a host with the NPU driver (`stackbuild doctor` says what the host lacks):")
    assert lines[start + 1] == "  stackbuild smoke rt"
    # The run line broken into lines of at most 100 columns, which a shell (and bash -c) join again into
    # exactly the smoke command: run here with stand-ins for stackbuild and python3 that print their words.
    run = lines[start + 2 :]
    assert len(run) > 1 and all(len(line) <= 100 for line in run) and run[0] == "  stackbuild run rt \\"
    given = subprocess.run(
        ["bash", "-c", 'stackbuild() { printf %s "$6"; }\n' + "\n".join(run)], capture_output=True, text=True
    ).stdout
    ran = subprocess.run(
        ["bash", "-c", "python3() { printf '%s\\n' \"$@\"; }\n" + given], capture_output=True, text=True
    ).stdout
    smoke = shlex.split(REFERENCE_MANIFEST.smoke.command)
    assert smoke[0] == "python3" and ran.splitlines() == smoke[1:]


def test_a_script_with_quotes_or_its_own_spacing_is_never_broken_and_an_image_holding_nothing_says_so() -> None:
    quoted = 'echo "Compare     success." && python3 -m harness.run --path /opt/stack # ' + "x" * 80
    assert run_lines("rt", quoted) == [f"  stackbuild run rt -- bash -c {shlex.quote(quoted)}"]
    engine = FakeEngine()
    holding(engine, "bare", REFERENCE)
    engine.image_labels["bare"] = {
        k: v for k, v in engine.image_labels["bare"].items() if not k.startswith("org.stackbuild.component.")
    }
    assert read_contents(engine, "bare", Arch.X86_64).component_ids() == []  # carries a smoke label: a new image


def test_an_image_without_a_carried_lock_is_refused_by_name() -> None:
    with pytest.raises(StackbuildError, match=r"^other carries no /etc/stackbuild/stack.lock.json: only the final"):
        read_contents(FakeEngine(), "other", Arch.X86_64)


def test_diff_names_exactly_the_component_that_moved_and_both_trees() -> None:
    engine = FakeEngine()
    source = REFERENCE.component("harness").source
    assert isinstance(source, LockedPath)
    moved = as_built(REFERENCE, {"harness": "f" * 64})
    holding(engine, "a", REFERENCE)
    holding(engine, "b", moved)
    changes = compare(read_contents(engine, "a", Arch.X86_64), read_contents(engine, "b", Arch.X86_64))
    assert changes == [Change("component", "harness", "tree_sha256", source.tree_sha256, "f" * 64)]
    assert changes[0].line() == f"component harness: tree_sha256 {source.tree_sha256} -> {'f' * 64}"
    assert compare(read_contents(engine, "a", Arch.X86_64), read_contents(engine, "a", Arch.X86_64)) == []
    assert Change("base", "base", "tarball_sha256", "aa", "bb").line() == "base: tarball_sha256 aa -> bb"
    assert Change("image", "image", "arch", "x86_64", "aarch64").line() == "image: arch x86_64 -> aarch64"


def moved(plan: Plan, stage: str) -> Plan:
    """The plan with one stage's inputs changed: a later build after an edit."""
    old = plan.stages[stage]
    changed = dataclasses.replace(old, inputs=dataclasses.replace(old.inputs, context=ContextInput("edit", "1")))
    return dataclasses.replace(plan, stages={**plan.stages, stage: changed})


def test_gc_removes_what_no_recent_build_used_and_keeps_inputs(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    request = dataclasses.replace(golden_request(image_prefix=TEST_PREFIX), cache=cache)
    first = golden_plan(image_prefix=TEST_PREFIX)
    second = moved(first, "kernels")
    engine = FakeEngine()
    for plan in (first, second):
        record_run(plan, request)
        for stage in plan.order():
            engine.tag(f"sha256:{stage.key}", stage.tag())
    stray = f"{TEST_PREFIX}/pending/kernels:" + "0" * 64  # a killed build's
    engine.tag("sha256:x", stray)
    toolkit = request.lock.package(Arch.X86_64, "toolkit")
    assert toolkit is not None
    for name in (toolkit.sha256, "e" * 64):
        cache.blob(name).parent.mkdir(parents=True, exist_ok=True)
        cache.blob(name).write_bytes(b"x")

    assert find_garbage(engine, cache, keep=2, inputs=False, image_prefix=TEST_PREFIX).images == ((stray, 1),)
    garbage = find_garbage(engine, cache, keep=1, inputs=False, image_prefix=TEST_PREFIX)
    assert sorted(tag for tag, _ in garbage.images) == sorted([first.stages["kernels"].tag(), stray])
    assert garbage.inputs == ()
    collect(engine, cache, garbage)
    assert sorted(engine.removed) == sorted([first.stages["kernels"].tag(), stray])
    assert [run.images for run in build_runs(cache)] == [frozenset(s.tag() for s in second.order())]
    assert cache.has(toolkit.sha256) and cache.has("e" * 64)  # inputs stay without --inputs

    with_inputs = find_garbage(engine, cache, keep=1, inputs=True, image_prefix=TEST_PREFIX)
    assert with_inputs.inputs == ((cache.blob("e" * 64), 1),)  # the toolkit package is the kept build's
    collect(engine, cache, with_inputs)
    assert cache.has(toolkit.sha256) and not cache.has("e" * 64)


def test_gc_refuses_while_a_build_runs_with_the_cache(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    refused = pytest.raises(StackbuildError, match="a build is running with this cache")
    with running_build(cache), refused, no_build_running(cache):
        pass
    with no_build_running(cache):  # the build is over
        assert find_garbage(FakeEngine(), cache, keep=1, inputs=False, image_prefix=TEST_PREFIX).images == ()


def test_records_gc_cannot_read_protect_nothing_and_break_nothing(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    cache.records.write({"stages": {"a": f"{TEST_PREFIX}/stage/a:1"}}, "runs", "s", "x86_64", "not-a-run")
    cache.records.write({"stages": "nonsense"}, "runs", "s", "x86_64", "1-1")
    (cache.root / "records" / "runs" / "s" / "x86_64" / "2-2.json").write_text("{")
    assert build_runs(cache) == []


def test_gc_leaves_images_tagged_today_after_its_own_builds_began_unless_told(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    request = dataclasses.replace(golden_request(image_prefix=TEST_PREFIX), cache=cache)
    plan = golden_plan(image_prefix=TEST_PREFIX)
    engine = FakeEngine()
    record_run(moved(plan, "kernels"), request)  # an older build of ours, dropped with keep=1 below
    record_run(plan, request)
    began = max(run.started for run in build_runs(cache))
    now = began + 7200
    theirs_today = f"{TEST_PREFIX}/stage/kernels:" + "1" * 64  # a stage no record here names
    theirs_pending = f"{TEST_PREFIX}/pending/kernels:" + "2" * 64
    theirs_old = f"{TEST_PREFIX}/stage/kernels:" + "3" * 64
    ours_old = moved(plan, "kernels").stages["kernels"].tag()
    times = {
        theirs_today: now - 3600,
        theirs_pending: now - 60,
        theirs_old: now - 3 * 86400,
        ours_old: began - 1,  # tagged before our last build began: ours, and no longer used
    }
    for tag, when in times.items():
        engine.tag("sha256:x", tag)
        engine.tag_times[tag] = when

    garbage = find_garbage(engine, cache, keep=1, inputs=False, now=now, image_prefix=TEST_PREFIX)
    assert sorted(garbage.recent) == sorted([theirs_today, theirs_pending])
    assert sorted(tag for tag, _ in garbage.images) == sorted([theirs_old, ours_old])
    engine.tag_times[ours_old] = now - 60  # tagged again after our builds began (stage tags are by content)
    assert ours_old in find_garbage(engine, cache, keep=1, inputs=False, now=now, image_prefix=TEST_PREFIX).recent
    everything = find_garbage(
        engine, cache, keep=1, inputs=False, include_recent=True, now=now, image_prefix=TEST_PREFIX
    )
    assert everything.recent == () and set(times) == {tag for tag, _ in everything.images}


def test_gc_removes_a_dead_process_scratch_files_and_verify_removes_blobs_that_lie(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    left = cache.root / "tmp" / "tmpkilled"
    left.mkdir(parents=True)
    (left / "part").write_bytes(b"half a download")
    garbage = find_garbage(FakeEngine(), cache, keep=1, inputs=False, image_prefix=TEST_PREFIX)
    assert garbage.scratch == ((left, len(b"half a download")),)
    collect(FakeEngine(), cache, garbage)
    assert not left.exists()

    good = cache.add_file(_written(tmp_path / "good", b"good"))
    liar = cache.blob("f" * 64)
    liar.write_bytes(b"not what its name says")
    assert lying_blobs(cache) == [liar] and liar.exists()  # found, not removed: gc --dry-run lists it
    assert cache.has(good)


def _written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_every_command_that_uses_the_cache_holds_it_against_gc(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))
    seen = []

    def holding(ctx: object, args: object) -> int:
        with Cache(tmp_path / "cache").locks.alone(BUILDS_LOCK) as alone:  # what gc tries
            seen.append(alone)
        return 0

    monkeypatch.setattr(locking, "cmd_lock", holding)
    monkeypatch.setattr(vendoring, "cmd_import", holding)
    assert run_cli(capsys, "lock", "reference")[0] == 0
    assert run_cli(capsys, "import", str(tmp_path))[0] == 0
    assert seen == [False, False]


def test_the_handover_commands_through_the_cli_on_the_fake_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """inspect, diff and gc as a user types them, the engine the CLI connects to being the fake."""
    engine = FakeEngine()
    holding(engine, "a", REFERENCE)
    holding(engine, "b", as_built(REFERENCE, {"harness": "f" * 64}))
    monkeypatch.setattr(Context, "engine", lambda *_: engine)
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))
    code, out, _ = run_cli(capsys, "inspect", "a", "--arch", "x86_64")
    assert code == 0 and re.search(r"^stack\s+reference", out, re.M), out
    code, out, _ = run_cli(capsys, "inspect", "a", "--arch", "x86_64", "--json")
    assert code == 0 and json.loads(out)["lock_sha256"] == REFERENCE.lock_sha256 and json.loads(out)["provenance"] == []
    code, out, _ = run_cli(capsys, "diff", "a", "b", "--arch", "x86_64", "--exit-code")
    assert code == 1 and out.startswith("component harness: tree_sha256 "), out
    code, out, _ = run_cli(capsys, "diff", "a", "a", "--arch", "x86_64")
    assert code == 0 and "hold the same stack" in out
    engine.tagged[f"{TEST_PREFIX}/stage/toolkit:" + "0" * 64] = "sha256:old"  # no build recorded it
    code, out, err = run_cli(capsys, "gc", "--dry-run", "--include-recent")
    assert code == 0 and f"would remove {TEST_PREFIX}/stage/toolkit:{'0' * 64}" in out, out + err
    assert f"{TEST_PREFIX}/stage/toolkit:" + "0" * 64 not in engine.removed


def test_gc_forgets_the_rewrites_and_listings_of_what_no_stage_image_holds(tmp_path: Path) -> None:
    """A layer's remembered rewrite is of use while a stage image has the rewritten layer, an install
    listing while the image it lists is a stage image: gc drops the others (a listing written before
    listings named their image too)."""
    cache, engine = Cache(tmp_path / "cache"), FakeEngine()
    stage = f"{TEST_PREFIX}/stage/harness:" + "1" * 64
    engine.tag("sha256:kept", stage)
    engine.image_layers[stage] = ("sha256:base", "sha256:held")
    for name, diff_id in (("a", "sha256:held"), ("b", "sha256:gone")):
        cache.records.write({"diff_id": diff_id}, REWRITES, name)
    for name, listed in (("c", {"image": "sha256:kept"}), ("d", {"image": "sha256:gone"}), ("e", {})):
        cache.records.write({"files": {}, **listed}, LISTINGS, name)
    assert sorted(stale_records(engine, cache, TEST_PREFIX)) == [(LISTINGS, "d"), (LISTINGS, "e"), (REWRITES, "b")]
    collect(engine, cache, find_garbage(engine, cache, keep=1, inputs=False, image_prefix=TEST_PREFIX))
    assert set(cache.records.every(REWRITES)) == {"a"} and set(cache.records.every(LISTINGS)) == {"c"}
