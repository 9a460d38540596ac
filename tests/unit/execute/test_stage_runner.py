"""One stage's build on a fake engine (builder.execute.stage's StageRunner, no Docker): tagged only
after its probes pass, its children built while it is probed, a failure naming its log and cause, the
registry cache pulled and pushed, and what normalising tells its children.

The real engine runs the same code in tests/docker.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from builder.engine import EngineError
from builder.engine.overlay import LayerDirs
from builder.execute.image_load import Normalised, Sent
from builder.execute.progress import Reporter
from builder.execute.scheduler import schedule
from builder.execute.stage import StageRunner, TaggedParents
from builder.execute.stage_log import StageFailed, StateReport
from builder.execute.stage_registry import RegistryCache
from builder.model.names import DEFAULT_PREFIX
from builder.plan.plan_model import FINALS, Plan, Stage
from builder.store.cache import Cache
from tests.fake_engine import FakeEngine
from tests.golden_plan import golden_plan
from tests.golden_plan import without_contexts as _without_contexts


def ignore(state: str, note: str = "") -> None:
    pass


def recording(states: list[str]) -> StateReport:
    def report(state: str, note: str = "") -> None:
        states.append(state)

    return report


@pytest.fixture(scope="module")
def before_8_5() -> Plan:
    """The golden stack on a release before 8.5.0, whose runtime image copies the toolkit stage's tree."""
    return golden_plan("8.3.RC1")


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
    temporary = (f"{DEFAULT_PREFIX}/pending/", f"{DEFAULT_PREFIX}/built/")
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
    engine = FakeEngine(fail_build=f"ARG TOOLKIT_IMAGE={DEFAULT_PREFIX}/stage/toolkit")
    runner = StageRunner(golden, engine, Cache(tmp_path / "cache"), tmp_path / "logs")
    with pytest.raises(StageFailed) as info:
        runner(golden.stages["devel-image"], ignore)
    message = str(info.value)
    assert "stage devel-image failed: The command '/bin/sh -c make' returned a non-zero code: 2" in message
    assert f"full log: {tmp_path / 'logs' / 'golden' / 'x86_64' / 'devel-image.log'}" in message
    assert engine.tagged == {}


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
    copier_told = threading.Event()
    configure = engine.configure

    def configure_once_told(image: str, changes: Sequence[str]) -> str:
        # The environment is read beside the layers: it is set only once the copier was told, which a
        # runner telling it after the environment never does.
        assert copier_told.wait(10), "the environment was to be set before the runtime image was told"
        return configure(image, changes)

    monkeypatch.setattr(engine, "configure", configure_once_told)

    class Told(TaggedParents):
        def built(self, stage: Stage, for_children: frozenset[str]) -> None:
            told.append((for_children, len(engine.configured)))
            copier_told.set()

    StageRunner(plan, engine, Cache(tmp_path / "cache"), tmp_path / "logs")(toolkit, ignore, Told())
    from_it = frozenset(c.name for c in plan.children("toolkit"))
    assert told == [(frozenset({"runtime-image"}), 0), (from_it, 1)]


class _Configuring(_OnDisk):
    """The environment, once set, is an image of its own (as the engine's config-only build makes)."""

    def configure(self, image: str, changes: Sequence[str]) -> str:
        super().configure(image, changes)
        return f"{image}-configured"

    def tag(self, image_id: str, ref: str) -> None:
        if image_id in self.removed:
            raise EngineError(f"No such image: {image_id}")
        super().tag(image_id, ref)


def test_layers_that_cannot_be_read_while_the_environment_is_added_leave_neither_image(
    before_8_5: Plan, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The layers are read from the data root while the environment is added, and neither removes
    the image while the other reads it: when the layers cannot be read, the stage fails so once the
    environment is set, and the image with it goes too; when the environment fails, that is what it
    reports, and the image built goes."""
    plan = _without_contexts(before_8_5)
    toolkit = plan.stages["toolkit"]

    def unreadable(*args: object) -> None:
        raise OSError("a layer went")

    monkeypatch.setattr("builder.execute.stage_normalise.normalise_dirs", unreadable)
    engine = _Configuring()
    with pytest.raises(StageFailed, match="cannot normalise its image: a layer went"):
        StageRunner(plan, engine, Cache(tmp_path / "cache"), tmp_path / "logs")(toolkit, ignore)
    built = f"sha256:{toolkit.key}"
    assert engine.configured and engine.removed[-2:] == [f"{built}-configured", built]
    assert not engine.tagged

    nothing_changed = Normalised({"rootfs": {"diff_ids": []}}, [], [], [], 0)

    def read_slowly(*args: object) -> Normalised:  # the environment fails first; the copier is told after
        time.sleep(0.5)
        return nothing_changed

    monkeypatch.setattr("builder.execute.stage_normalise.normalise_dirs", read_slowly)
    engine = _Configuring(script_env={"BROKEN": "one\ntwo"})
    with pytest.raises(StageFailed, match="the environment scripts set BROKEN to several lines"):
        StageRunner(plan, engine, Cache(tmp_path / "cache"), tmp_path / "logs")(toolkit, ignore)
    assert not engine.configured and engine.removed == [built]


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
