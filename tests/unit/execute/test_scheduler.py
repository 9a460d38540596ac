"""Scheduling a plan's stages (builder.execute.scheduler) with a build_one that records what it is
given: dependency order within the job limit, a failure skipping what depends on it, an error after a
stage built ending the run, and a child started on its parent as built only when it may be."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from builder.execute.progress import Reporter
from builder.execute.scheduler import schedule
from builder.execute.stage import Run
from builder.execute.stage_log import StageFailed, StateReport
from builder.plan.plan_model import Plan, Stage


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
