"""The scheduler: stages in dependency order, independent ones at once (up to `jobs` building).

A stage starts once each parent is built: on the parent's image as built while it is normalised
and probed, when it reads none of the files normalising changes there (the parent's dated files
alone, or paths it copies that none of them is under; a stage FROM the parent is then put over its
normalised image), else on the normalised image while it is probed; it is tagged only after every
parent is. A stage whose image the registry cache
had (`early`) starts at once: it is probed beside its parents, and waits for them only to be
tagged (or, when it must be built after all, to be built). `jobs` counts builds only: normalising
(mostly the engine loading layers), pulled images, probing and waiting run beside them.

A failure stops new starts; what depends on the failed stage is reported skipped (and dropped if
it was built from it meanwhile), stages already running finish, and the first failure is raised.
"""

from __future__ import annotations

import concurrent.futures
import functools
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from builder.execute.progress import Reporter
from builder.execute.stage import Run
from builder.execute.stage_log import StageFailed, StageSkipped, StateReport
from builder.plan.plan_model import Plan, Stage

BuildOne = Callable[[Stage, StateReport, Run], str]


@dataclass
class _Run:
    """The run's state, shared by the scheduling thread and the stages' threads (under `changed`)."""

    plan: Plan
    pending: list[Stage]
    tagged: set[str]  # probed and tagged (or present before the run)
    # Built this run, before it is normalised: those of its children that may build on it as built.
    as_built: dict[str, frozenset[str]] = field(default_factory=dict)
    with_pending_tag: set[str] = field(default_factory=set)  # normalised this run, being probed
    building: set[str] = field(default_factory=set)  # counted against jobs
    finished: set[str] = field(default_factory=set)  # tagged, failed or skipped
    image_ids: dict[str, str] = field(default_factory=dict)
    failure: StageFailed | None = None
    crash: BaseException | None = None  # not a stage's failure: an error of stackbuild's own, raised as is
    changed: threading.Condition = field(default_factory=threading.Condition)

    def ready(self, jobs: int, early: Callable[[Stage], bool]) -> Stage | None:
        if self.failure or self.crash:
            return None
        free = len(self.building) < jobs
        return next((s for s in self.pending if early(s) or (free and self._can_start(s))), None)

    def _can_start(self, stage: Stage) -> bool:
        return all(self._there_for(stage, parent) for parent in stage.parents)

    def _there_for(self, stage: Stage, parent: str) -> bool:
        """Whether stage may build on parent now: tagged, normalised, or as built for it."""
        return parent in self.tagged or parent in self.with_pending_tag or stage.name in self.as_built.get(parent, ())

    # The Run protocol, as each stage's build sees it.
    def image_of(self, stage: Stage, parent: Stage) -> str:
        """The parent's most settled image now: tagged, else normalised, else as built (for stage)."""
        with self.changed:
            if parent.name in self.tagged:
                return parent.tag()
            if parent.name in self.with_pending_tag:
                return parent.pending_tag()
            return parent.as_built_tag() if stage.name in self.as_built.get(parent.name, ()) else parent.tag()

    def built(self, stage: Stage, for_children: frozenset[str]) -> None:
        with self.changed:
            self.as_built[stage.name] = for_children
            self.building.discard(stage.name)
            self.changed.notify_all()

    def normalised(self, stage: Stage) -> None:
        with self.changed:
            self.with_pending_tag.add(stage.name)
            self.changed.notify_all()

    def normalised_of(self, parent: Stage) -> str | None:
        name = parent.name
        with self.changed:
            self.changed.wait_for(lambda: name in self.tagged or name in self.with_pending_tag or name in self.finished)
            if name in self.tagged:
                return parent.tag()
            if name in self.finished:  # failed after it was normalised (its probes): nothing to go over
                return None
            return parent.pending_tag()

    def parents_tagged(self, stage: Stage) -> bool:
        with self.changed:
            self.changed.wait_for(lambda: all(p in self.finished or p in self.tagged for p in stage.parents))
            return all(p in self.tagged for p in stage.parents)

    def parents_built(self, stage: Stage) -> bool:
        with self.changed:
            self.changed.wait_for(lambda: all(self._there_for(stage, p) or p in self.finished for p in stage.parents))
            return all(
                p in self.tagged or (self._there_for(stage, p) and p not in self.finished) for p in stage.parents
            )

    def finish(
        self,
        stage: Stage,
        image_id: str | None = None,
        failure: StageFailed | None = None,
        crash: BaseException | None = None,
    ) -> None:
        with self.changed:
            self.building.discard(stage.name)
            self.finished.add(stage.name)
            if image_id is not None:
                self.image_ids[stage.name] = image_id
                self.tagged.add(stage.name)
            self.failure = self.failure or failure
            self.crash = self.crash or crash
            self.changed.notify_all()


@dataclass(frozen=True)
class _Callbacks:
    build_one: BuildOne
    reporter: Reporter
    on_built: Callable[[Stage], None]
    outcome: Callable[[Stage], str]


def _work(run: _Run, stage: Stage, calls: _Callbacks) -> None:
    """One stage in its own thread: built, probed and tagged, or failed, or skipped."""
    try:
        image_id = calls.build_one(stage, functools.partial(calls.reporter.update, stage.name), run)
        calls.on_built(stage)
        calls.reporter.update(stage.name, calls.outcome(stage), stage.key[:12])
    except StageSkipped:
        calls.reporter.update(stage.name, "skipped")
        run.finish(stage)
    except StageFailed as err:
        # Built from a parent that then failed (a child often fails first): the parent's failure is
        # the one to report, so wait for the parents before choosing.
        parent_failed = not run.parents_tagged(stage)
        calls.reporter.update(stage.name, *(("skipped",) if parent_failed else ("failed", err.reason)))
        run.finish(stage, failure=None if parent_failed else err)
    except BaseException as err:  # finished whatever happens: nothing waits forever on this stage
        run.finish(stage, crash=err)
        raise
    else:
        run.finish(stage, image_id=image_id)


def schedule(
    plan: Plan,
    to_build: Collection[str],
    build_one: BuildOne,
    jobs: int,
    reporter: Reporter,
    why: Callable[[Stage], str],
    on_built: Callable[[Stage], None],
    outcome: Callable[[Stage], str] = lambda stage: "built",
    early: Callable[[Stage], bool] = lambda stage: False,
) -> dict[str, str]:
    """Build the stages named in to_build (those early may start before their parents are built);
    their image ids. Raises the first StageFailed."""
    present = set(plan.stages) - set(to_build)
    run = _Run(plan, pending=[s for s in plan.order() if s.name in to_build], tagged=present, finished=set(present))
    calls = _Callbacks(build_one, reporter, on_built, outcome)
    with concurrent.futures.ThreadPoolExecutor(max(1, len(run.pending))) as pool, run.changed:
        while True:
            while (stage := run.ready(jobs, early)) is not None:
                run.pending.remove(stage)
                if not early(stage):  # a pulled image is probed, not built (one built after all is not counted)
                    run.building.add(stage.name)
                reporter.update(stage.name, "building", why(stage))
                pool.submit(_work, run, stage, calls)
            if run.finished >= set(plan.stages) - {s.name for s in run.pending}:
                break
            run.changed.wait()
    for stage in run.pending:
        reporter.update(stage.name, "skipped")
    if run.crash:
        raise run.crash
    if run.failure:
        raise run.failure
    return run.image_ids
