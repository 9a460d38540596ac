"""The build chain's logic with a fake engine (no Docker): scheduling, what is cached, one stage's
build and probes, the smoke's device access.

The real engine runs the same code in tests/docker.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from builder.engine import launcher
from builder.engine.overlay import LayerDirs
from builder.execute.image_load import Normalised, Sent
from builder.execute.pipeline import BuildOptions, execute, find_cached
from builder.execute.progress import Reporter
from builder.execute.scheduler import schedule
from builder.execute.stage import Run, StageRunner, TaggedParents
from builder.execute.stage_log import StageFailed, StateReport
from builder.execute.stage_registry import RegistryCache
from builder.manifest.model import Smoke
from builder.plan.plan_model import FINALS, Plan, Stage
from builder.plan.why import record_build, why
from builder.store.cache import Cache
from builder.verify.smoke import run_smoke
from tests.conftest import TEST_PREFIX
from tests.fake_engine import FakeEngine
from tests.golden_plan import golden_plan


def ignore(state: str, note: str = "") -> None:
    pass


def recording(states: list[str]) -> StateReport:
    def report(state: str, note: str = "") -> None:
        states.append(state)

    return report


@pytest.fixture
def golden() -> Plan:
    return golden_plan()


@pytest.fixture(scope="module")
def before_8_5() -> Plan:
    """The golden stack on a release before 8.5.0, whose runtime image copies the toolkit stage's tree."""
    return golden_plan("8.3.RC1")


class Recorder:
    """A build_one that takes a moment and records the order and how many ran at once."""

    def __init__(self, fail: str | None = None) -> None:
        self.order: list[str] = []
        self.active = self.max_active = 0
        self.guard = threading.Lock()
        self.fail = fail

    def __call__(self, stage: Stage, report: StateReport, run: Run | None = None) -> str:
        with self.guard:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            self.order.append(stage.name)
        time.sleep(0.05)
        with self.guard:
            self.active -= 1
        if stage.name == self.fail:
            raise StageFailed(stage.name, "probe x failed: broken", log_file=Path("x.log"))
        return f"sha256:{stage.key}"


def run(plan: Plan, to_build: set[str], build_one: Recorder, jobs: int = 2) -> dict[str, str]:
    with Reporter(plan.stages, live=False) as reporter:
        return schedule(plan, to_build, build_one, jobs, reporter, why=lambda s: "", on_built=lambda s: None)


def test_builds_in_dependency_order_within_the_job_limit(golden: Plan) -> None:
    recorder = Recorder()
    ids = run(golden, set(golden.stages), recorder)
    position = {name: i for i, name in enumerate(recorder.order)}
    for stage in golden.order():
        assert all(position[p] < position[stage.name] for p in stage.parents), stage.name
    assert recorder.max_active == 2  # base-devel and base-runtime, then the two finals, ran together
    assert set(ids) == set(golden.stages)


def test_one_job_builds_one_at_a_time(golden: Plan) -> None:
    recorder = Recorder()
    run(golden, set(golden.stages), recorder, jobs=1)
    assert recorder.max_active == 1


def test_an_error_after_a_stage_built_ends_the_run_instead_of_hanging(golden: Plan) -> None:
    """A record that cannot be written (a full disk) after a stage built: raised as is, nothing waits on."""

    def full_disk(stage: Stage) -> None:
        if stage.name == "devkit":
            raise OSError(28, "No space left on device")

    done = threading.Event()
    failure: list[BaseException] = []

    def build() -> None:
        try:
            with Reporter(golden.stages, live=False) as reporter:
                schedule(golden, set(golden.stages), Recorder(), 2, reporter, why=lambda s: "", on_built=full_disk)
        except OSError as err:
            failure.append(err)
        done.set()

    threading.Thread(target=build, daemon=True).start()
    assert done.wait(timeout=30), "the run hangs"
    assert failure and "No space left" in str(failure[0])


def test_failure_skips_what_depends_on_it(golden: Plan, capsys: pytest.CaptureFixture[str]) -> None:
    recorder = Recorder(fail="devkit")
    with pytest.raises(StageFailed, match="stage devkit failed: probe x failed: broken"):
        run(golden, set(golden.stages), recorder)
    assert "kernels" not in recorder.order and "devel-image" not in recorder.order
    assert "[stackbuild] kernels: skipped" in capsys.readouterr().err


def test_present_finals_need_nothing_else(golden: Plan) -> None:
    engine = FakeEngine(present={golden.stages["devel-image"].tag(), golden.stages["runtime-image"].tag()})
    work = find_cached(golden, engine)
    assert work.to_build == frozenset()
    assert set(work.present) == {"devel-image", "runtime-image"}


def test_missing_final_walks_down_to_present_parents(golden: Plan, tmp_path: Path) -> None:
    missing = {"kernels", "runtime-image", "devel-image"}
    engine = FakeEngine(present={s.tag() for s in golden.order() if s.name not in missing})
    work = find_cached(golden, engine)
    assert work.to_build == missing
    cache = Cache(tmp_path)
    assert why(cache, golden, golden.stages["kernels"]) == "never built here"
    record_build(cache, golden, golden.stages["kernels"])
    assert why(cache, golden, golden.stages["kernels"]) == "image missing (removed since it was built)"


def test_stage_is_tagged_only_after_its_probes_pass(golden: Plan, tmp_path: Path) -> None:
    """The real StageRunner on a fake engine: a failing probe removes the image and tags nothing."""
    stage = golden.stages["devel-image"]  # no context to fetch; the finals have no probes
    probed = dataclasses.replace(golden.stages["kernels"], context=())
    engine = FakeEngine()
    runner = StageRunner(golden, engine, Cache(tmp_path / "cache"), tmp_path / "logs")
    normal = engine.normalised(f"sha256:{stage.key}", golden.source_date_epoch)
    assert runner(stage, ignore) == normal
    # The pending tag (children may build from it while probes run) stays until the run ends.
    assert engine.tagged == {stage.pending_tag(): normal, stage.tag(): normal}
    assert engine.removed == [f"sha256:{stage.key}"]  # the image as built, once normalised
    runner.drop_pending()
    assert engine.removed[1:] == [stage.pending_tag()]
    engine.probe_ok = False
    states: list[str] = []
    with pytest.raises(StageFailed, match=r"stage kernels failed: probe command test -x output/bin/00_basic_matmul"):
        runner(probed, recording(states))
    assert states == ["probing"]
    assert probed.tag() not in engine.tagged
    assert engine.removed[2:] == [
        f"sha256:{probed.key}",
        engine.normalised(f"sha256:{probed.key}", golden.source_date_epoch),
    ]
    log = (tmp_path / "logs" / "golden" / "x86_64" / "kernels.log").read_text()
    assert "# probe command test -x output/bin/00_basic_matmul: FAILED: fake" in log


def _without_contexts(plan: Plan) -> Plan:
    """The plan with nothing to fetch for any stage (the keys stay: they are of the inputs)."""
    return dataclasses.replace(plan, stages={n: dataclasses.replace(s, context=()) for n, s in plan.stages.items()})


def _build_all(plan: Plan, engine: FakeEngine, tmp_path: Path) -> StageRunner:
    runner = StageRunner(plan, engine, Cache(tmp_path / "cache"), tmp_path / "logs")
    with Reporter(plan.stages, live=False) as reporter:
        try:
            schedule(plan, set(plan.stages), runner, 2, reporter, why=lambda s: "", on_built=lambda s: None)
        finally:
            runner.drop_pending()
    return runner


def test_children_build_while_a_parent_is_probed_and_are_tagged_after_it(golden: Plan, tmp_path: Path) -> None:
    plan = _without_contexts(golden)
    kernels = plan.stages["kernels"]
    kernels_id = FakeEngine().normalised(f"sha256:{kernels.key}", plan.source_date_epoch)
    engine = FakeEngine(probe_seconds={kernels_id: 0.5})
    _build_all(plan, engine, tmp_path)
    # The finals were built from kernels' pending image while its probes ran.
    final_args = [args for args in engine.build_args if "KERNELS_IMAGE" in args]
    assert [args["KERNELS_IMAGE"] for args in final_args] == [kernels.pending_tag()] * 2
    assert engine.events.index("build devel-image") < engine.events.index(f"probed {kernels_id}")
    assert {s.tag() for s in plan.order()} <= set(engine.tagged)
    # The names an image has only while a run needs it (pending, and built while its environment is
    # added) are all removed, and no other name is; the images removed (as built, before normalising)
    # are ones no lasting tag names.
    temporary = (f"{TEST_PREFIX}/pending/", f"{TEST_PREFIX}/built/")
    names = {r for r in engine.removed if not r.startswith("sha256:")}
    images = set(engine.removed) - names
    assert {ref for ref in engine.tagged if ref.startswith(temporary)} == names
    assert images and images.isdisjoint(i for ref, i in engine.tagged.items() if not ref.startswith(temporary))


def test_a_child_built_from_a_parent_that_fails_its_probes_is_dropped(
    golden: Plan, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = _without_contexts(golden)
    kernels = plan.stages["kernels"]
    kernels_id = FakeEngine().normalised(f"sha256:{kernels.key}", plan.source_date_epoch)
    engine = FakeEngine(probe_seconds={kernels_id: 0.5}, failing_probes={kernels_id})
    with pytest.raises(StageFailed, match="stage kernels failed: probe"):
        _build_all(plan, engine, tmp_path)
    assert "build devel-image" in engine.events  # it started from the pending image
    assert not {kernels.tag(), *plan.final_tags.values(), *(plan.stages[f].tag() for f in FINALS)} & set(engine.tagged)
    assert {engine.normalised(f"sha256:{plan.stages[f].key}", plan.source_date_epoch) for f in FINALS} <= set(
        engine.removed
    )
    err = capsys.readouterr().err
    assert "[stackbuild] devel-image: skipped" in err and "[stackbuild] runtime-image: skipped" in err


def test_failed_build_names_its_log_and_cause(golden: Plan, tmp_path: Path) -> None:
    engine = FakeEngine(fail_build=f"ARG TOOLKIT_IMAGE={TEST_PREFIX}/stage/toolkit")
    runner = StageRunner(golden, engine, Cache(tmp_path / "cache"), tmp_path / "logs")
    with pytest.raises(StageFailed) as info:
        runner(golden.stages["devel-image"], ignore)
    message = str(info.value)
    assert "stage devel-image failed: The command '/bin/sh -c make' returned a non-zero code: 2" in message
    assert f"full log: {tmp_path / 'logs' / 'golden' / 'x86_64' / 'devel-image.log'}" in message
    assert engine.tagged == {}


def test_smoke_gives_the_npu_and_driver_to_the_container() -> None:
    """The production smoke path: the device nodes, the control nodes and the driver mounts reach the engine."""
    engine = FakeEngine()
    spec = Smoke(command="launch", expect="success", needs_device=True)
    outcome = run_smoke(engine, "img", spec, devices=["/dev/davinci0", "/dev/davinci3"])
    assert outcome.passed and outcome.launched
    access = engine.runs[-1][2]
    assert access.devices == (
        "/dev/davinci0",
        "/dev/davinci3",
        "/dev/davinci_manager",
        "/dev/devmm_svm",
        "/dev/hisi_hdc",
    )
    assert "/usr/local/Ascend/driver/lib64/" in access.read_only_mounts
    flags = " ".join(launcher().launch_line("img", [], access=outcome.access))
    for expected in (
        "--device /dev/davinci0",
        "--device /dev/davinci_manager",
        "--device /dev/devmm_svm",
        "--device /dev/hisi_hdc",
        "-v /usr/local/Ascend/driver/lib64/:/usr/local/Ascend/driver/lib64/:ro",
        "-v /etc/ascend_install.info:/etc/ascend_install.info:ro",
    ):
        assert expected in flags


def test_smoke_without_npu_is_skipped_never_passed() -> None:
    engine = FakeEngine()
    outcome = run_smoke(engine, "img", Smoke(command="launch", expect="success", needs_device=True), devices=[])
    assert not outcome.passed and not outcome.launched
    assert outcome.summary == "launch: skipped (no NPU device on this host); static checks passed"
    assert engine.runs[-1][2].devices == ()


def test_a_recorded_smoke_pass_is_for_that_image_and_that_smoke(golden: Plan, tmp_path: Path) -> None:
    from builder.execute.pipeline import StagesBuilt, Tagged, smoke

    engine, cache = FakeEngine(), Cache(tmp_path)
    tagged = Tagged(StagesBuilt(golden, {}, (), ()), dict(golden.final_tags))
    first = Smoke(command="launch", expect="success", needs_device=False)
    engine.smoke_output = "success"
    assert smoke(tagged, first, engine, cache, ()).passed and len(engine.runs) == 1
    assert smoke(tagged, first, engine, cache, ()).summary == "launch: passed (recorded for this image key)"
    assert len(engine.runs) == 1
    changed = Smoke(command="launch", expect="other", needs_device=False)
    assert not smoke(tagged, changed, engine, cache, ()).passed and len(engine.runs) == 2  # ran again, and failed


def test_a_stage_in_the_registry_cache_is_pulled_and_probed_before_it_is_tagged(golden: Plan, tmp_path: Path) -> None:
    probed = dataclasses.replace(golden.stages["kernels"], context=())
    cache = RegistryCache(pull_from="127.0.0.1:5000/team/cache")
    ref = RegistryCache.ref("127.0.0.1:5000/team/cache", probed)
    engine = FakeEngine(registry={ref: "sha256:from-the-registry"})
    runner = StageRunner(golden, engine, Cache(tmp_path / "cache"), tmp_path / "logs", cache)
    states: list[str] = []
    assert runner(probed, recording(states)) == "sha256:from-the-registry"
    assert states == ["pulling", "probing"] and engine.dockerfiles == []  # nothing built
    assert engine.tagged[probed.tag()] == "sha256:from-the-registry" and runner.pulled == {"kernels"}
    assert [image for image, *_ in engine.runs] == ["sha256:from-the-registry"]  # its probes ran first
    assert engine.removed == [ref]  # only the registry name dropped
    # A bad push (the image fails its probes) poisons nothing: it is dropped and the stage built here.
    poisoned = FakeEngine(registry={ref: "sha256:bad"}, probe_ok=False)
    runner = StageRunner(golden, poisoned, Cache(tmp_path / "cache2"), tmp_path / "logs", cache)
    with pytest.raises(StageFailed):  # the local build's probes fail too on this fake engine
        runner(probed, ignore)
    assert poisoned.removed[0] == "sha256:bad" and len(poisoned.dockerfiles) == 1
    assert probed.tag() not in poisoned.tagged and runner.pulled == set()


def test_a_built_stage_is_pushed_after_its_probes_and_a_missing_one_is_built(golden: Plan, tmp_path: Path) -> None:
    stage = golden.stages["devel-image"]
    cache = RegistryCache(pull_from="reg.test/cache", push_to="reg.test/cache")
    engine = FakeEngine()
    runner = StageRunner(golden, engine, Cache(tmp_path / "cache"), tmp_path / "logs", cache)
    states: list[str] = []
    normal = engine.normalised(f"sha256:{stage.key}", golden.source_date_epoch)
    assert runner(stage, recording(states)) == normal
    ref = RegistryCache.ref("reg.test/cache", stage)
    assert engine.pulled == [ref] and engine.pushed == [ref] and states[0] == "pulling" and states[-1] == "pushing"
    assert engine.registry == {ref: normal} and engine.tagged[stage.tag()] == normal
    log = (tmp_path / "logs" / "golden" / "x86_64" / "devel-image.log").read_text()
    assert f"# registry cache: {ref} is not there; building\n# stage devel-image key" in log  # the miss, then the build
    assert f"# pushed {ref} (sha256:" in log


def test_a_data_root_read_failing_while_the_layers_are_sent_falls_back_to_docker_save(
    golden: Plan, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file of a layer gone between its header and its data (the load has begun): the image is
    normalised again through docker save, not failed."""
    stage = golden.stages["devel-image"]

    def vanishing() -> Iterator[bytes]:
        yield b"\0" * 512
        raise FileNotFoundError(2, "No such file or directory", "/var/lib/docker/overlay2/x/diff/opt/f")

    sent = Sent("l/layer.tar", 0, 1024, vanishing, ("sha256:built",))
    from_dirs = Normalised({"rootfs": {"diff_ids": [""]}}, [""], ["l/layer.tar"], [sent], 0)
    engine = _OnDisk()
    monkeypatch.setattr("builder.execute.stage_normalise.normalise_dirs", lambda *args: from_dirs)
    runner = StageRunner(golden, engine, Cache(tmp_path / "cache"), tmp_path / "logs")
    assert runner(stage, ignore) == engine.normalised(f"sha256:{stage.key}", golden.source_date_epoch)
    log = runner.log_file(stage).read_text()
    assert "# the data root could not be read as the layers were sent ([Errno 2] No such file" in log
    assert "through docker save (was" in log


class _OnDisk(FakeEngine):
    """An engine whose images have a data root (what is read there, the test says)."""

    def layer_dirs(self, image_id: str) -> LayerDirs | None:
        return LayerDirs(b"{}", [])


def test_stages_in_the_registry_cache_are_pulled_at_once_and_probed_beside_their_parents(
    golden: Plan, tmp_path: Path
) -> None:
    """Every stage asked of the registry cache when the run starts; a pulled child is probed while its
    parent's probes still run, and tagged only after it. A stage whose parent fails is not tagged, and
    the image pulled for it keeps no registry name."""
    plan = _without_contexts(golden)
    where = "127.0.0.1:5000/team/cache"
    refs = {s.name: RegistryCache.ref(where, s) for s in plan.order()}
    engine = FakeEngine(registry={ref: f"sha256:pulled-{name}" for name, ref in refs.items()})
    engine.probe_seconds["sha256:pulled-base-devel"] = 0.5
    options = BuildOptions(jobs=1, live=False, log_dir=tmp_path / "logs", registry=RegistryCache(pull_from=where))
    built = execute(find_cached(plan, engine), engine, Cache(tmp_path / "cache"), options, lambda line: None)
    assert set(built.pulled) == set(plan.stages) and built.built == ()
    assert sorted(engine.pulled) == sorted(refs.values())  # each asked once
    probed = [event for event in engine.events if event.startswith("probed")]
    assert probed.index("probed sha256:pulled-toolkit") < probed.index("probed sha256:pulled-base-devel")
    assert all(engine.tagged[s.tag()] == f"sha256:pulled-{s.name}" for s in plan.order())
    # The toolkit's pushed image fails its probes: what is built on it is not taken from the cache.
    broken = FakeEngine(registry={ref: f"sha256:pulled-{name}" for name, ref in refs.items()}, probe_ok=True)
    broken.failing_probes = {"sha256:pulled-toolkit"}
    broken.fail_build = "FROM"  # built after all, the toolkit fails too: the run stops there
    with pytest.raises(StageFailed, match="stage toolkit failed"):
        execute(find_cached(plan, broken), broken, Cache(tmp_path / "cache2"), options, lambda line: None)
    assert plan.stages["kernels"].tag() not in broken.tagged
    assert not any(ref in broken.tagged and ref not in broken.removed for ref in refs.values())


def test_a_pulled_stage_that_fails_its_probes_waits_for_its_parents_before_it_is_built(
    golden: Plan, tmp_path: Path
) -> None:
    """Started early (its image was in the registry cache), a stage whose pulled image fails its
    probes is built here after all: only once its parents are there (a build naming an image the
    engine lacks fails)."""
    plan = _without_contexts(golden)
    where = "127.0.0.1:5000/team/cache"
    engine = FakeEngine(
        registry={RegistryCache.ref(where, s): f"sha256:pulled-{s.name}" for s in plan.order()},
        parents_must_exist=True,
        failing_probes={"sha256:pulled-kernels"},
        probe_seconds={"sha256:pulled-toolkit": 0.5, "sha256:pulled-devkit": 0.5},
    )
    options = BuildOptions(jobs=2, live=False, log_dir=tmp_path / "logs", registry=RegistryCache(pull_from=where))
    built = execute(find_cached(plan, engine), engine, Cache(tmp_path / "cache"), options, lambda line: None)
    assert built.built == ("kernels",) and set(built.pulled) == set(plan.stages) - {"kernels"}
    assert engine.events.index("probed sha256:pulled-toolkit") < engine.events.index("build kernels")
    log = (tmp_path / "logs" / "golden" / "x86_64" / "kernels.log").read_text()
    assert "# the pulled image fails its probes (" in log


class _Normalising:
    """A build_one that says its stage is built (as built for the children named), then normalises it
    for a moment; it records when each stage starts and what it was built on."""

    def __init__(self, plan: Plan, as_built_for: dict[str, frozenset[str]]) -> None:
        self.plan, self.as_built_for = plan, as_built_for
        self.events: list[str] = []
        self.built_on: dict[str, dict[str, str]] = {}
        self.guard = threading.Lock()

    def __call__(self, stage: Stage, report: StateReport, run: Run | None = None) -> str:
        assert run is not None
        with self.guard:
            self.events.append(f"start {stage.name}")
            self.built_on[stage.name] = {p: run.image_of(stage, self.plan.stages[p]) for p in stage.parents}
        run.built(stage, self.as_built_for.get(stage.name, frozenset()))
        time.sleep(0.2)
        with self.guard:
            self.events.append(f"normalised {stage.name}")
        run.normalised(stage)
        return f"sha256:{stage.key}"


@pytest.mark.parametrize("as_built", [True, False], ids=["reads-nothing-changed", "reads-a-changed-file"])
def test_a_child_starts_on_its_parent_as_built_only_when_it_reads_nothing_normalising_changes(
    golden: Plan, as_built: bool
) -> None:
    toolkit, devkit = golden.stages["toolkit"], golden.stages["devkit"]
    build_one = _Normalising(golden, {"toolkit": frozenset({"devkit"} if as_built else ())})
    with Reporter(golden.stages, live=False) as reporter:
        schedule(golden, {"toolkit", "devkit"}, build_one, 2, reporter, why=lambda s: "", on_built=lambda s: None)
    started, normalised = build_one.events.index("start devkit"), build_one.events.index("normalised toolkit")
    assert (started < normalised) is as_built, build_one.events
    # Else it built on the toolkit normalised (under its pending tag, or its stage tag once tagged).
    assert (build_one.built_on[devkit.name]["toolkit"] == toolkit.as_built_tag()) is as_built


def test_children_that_read_none_of_the_files_normalising_changes_are_told_they_may_build_on_it_as_built(
    before_8_5: Plan, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The toolkit's installer log is left out by normalising: the runtime image, which copies only
    the toolkit's install paths, may build on it as built; the stages FROM it wait."""
    plan = _without_contexts(before_8_5)
    toolkit = plan.stages["toolkit"]
    log = "var/log/ascend_seclog/ascend_install.log"
    from_dirs = Normalised({"rootfs": {"diff_ids": []}}, [], [], [], 0, changed=[log])
    monkeypatch.setattr("builder.execute.stage_normalise.normalise_dirs", lambda *args: from_dirs)
    told: list[frozenset[str]] = []

    class Told(TaggedParents):
        def built(self, stage: Stage, for_children: frozenset[str]) -> None:
            told.append(for_children)

    engine = _OnDisk()
    runner = StageRunner(plan, engine, Cache(tmp_path / "cache"), tmp_path / "logs")
    runner(toolkit, ignore, Told())
    assert set(told) == {frozenset({"runtime-image"})}  # before its environment is added, and after
    assert toolkit.as_built_tag() in engine.tagged
    assert f"1 file(s) left out or changed ({log})" in runner.log_file(toolkit).read_text()


def test_a_child_that_only_copies_from_a_stage_starts_before_its_environment_is_added(
    before_8_5: Plan, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runtime image copies files of the toolkit, never its config: it may build on the toolkit
    as built at once; the stages FROM the toolkit inherit its ENV, so they wait for it to be added."""
    plan = _without_contexts(before_8_5)
    toolkit = plan.stages["toolkit"]
    assert toolkit.env_capture is not None
    nothing_changed = Normalised({"rootfs": {"diff_ids": []}}, [], [], [], 0)
    monkeypatch.setattr("builder.execute.stage_normalise.normalise_dirs", lambda *args: nothing_changed)
    engine = _OnDisk()
    told: list[tuple[frozenset[str], int]] = []

    class Told(TaggedParents):
        def built(self, stage: Stage, for_children: frozenset[str]) -> None:
            told.append((for_children, len(engine.configured)))

    StageRunner(plan, engine, Cache(tmp_path / "cache"), tmp_path / "logs")(toolkit, ignore, Told())
    from_it = frozenset(c.name for c in plan.children("toolkit"))
    assert told == [(frozenset({"runtime-image"}), 0), (from_it, 1)]


def test_a_stage_whose_children_started_fails_when_docker_save_changes_other_files_than_its_data_root(
    before_8_5: Plan, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its data root said what normalising changes, and a child started by it; the data root then did
    not reassemble, and docker save says otherwise: the stage fails (its children are dropped with it)."""
    plan = _without_contexts(before_8_5)
    toolkit = plan.stages["toolkit"]

    def unreadable() -> Iterator[bytes]:
        raise ValueError("layer sha256:1 does not reassemble from the engine's data root")
        yield b""

    sent = Sent("l/layer.tar", 0, 1024, unreadable, ("sha256:built",))
    from_dirs = Normalised({"rootfs": {"diff_ids": [""]}}, [""], ["l/layer.tar"], [sent], 0, changed=["tmp/x"])
    monkeypatch.setattr("builder.execute.stage_normalise.normalise_dirs", lambda *args: from_dirs)
    runner = StageRunner(plan, _OnDisk(), Cache(tmp_path / "cache"), tmp_path / "logs")
    with pytest.raises(StageFailed, match="docker save gives other files to leave out or change than its data root"):
        runner(toolkit, ignore, TaggedParents())
