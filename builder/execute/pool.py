"""A pool of engines: a run's stages spread over several Docker engines, their images shared through
the registry stage cache (each stage is pushed once its probes pass; an engine that lacks a
parent pulls it from there, probed, before building on it).

Stages go to the engines of the plan's architecture when the pool has one, else to every engine,
under emulation (`routing`). The first engine is the one the build reports to, whatever its
architecture: the final images end up there for the tags and the smoke."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence

from builder.execute.routing import Routing
from builder.execute.stage import Run, StageRunner, TaggedParents
from builder.execute.stage_log import StageFailed, StageSkipped, StateReport
from builder.plan.plan_model import Stage


class _OnEngine:
    """The run as a stage on one engine sees it: a parent built on this engine this run may be there
    as built or under its pending tag only; any other parent is there under its stage tag (brought
    if it was built elsewhere: its other tags are on the engine that built it)."""

    def __init__(self, run: Run, here: frozenset[str]) -> None:
        self.run, self.here = run, here

    def image_of(self, stage: Stage, parent: Stage) -> str:
        return self.run.image_of(stage, parent) if parent.name in self.here else parent.tag()

    def built(self, stage: Stage, for_children: frozenset[str]) -> None:
        self.run.built(stage, for_children)

    def normalised(self, stage: Stage) -> None:
        self.run.normalised(stage)

    def normalised_of(self, parent: Stage) -> str | None:
        return self.run.normalised_of(parent) if parent.name in self.here else parent.tag()

    def parents_tagged(self, stage: Stage) -> bool:
        return self.run.parents_tagged(stage)

    def parents_built(self, stage: Stage) -> bool:
        return self.run.parents_built(stage)


class EnginePool:
    """build_one over several engines: each stage goes to the least busy engine routing gives it,
    preferring the one that built most of its parents (they need no transfer)."""

    def __init__(self, runners: Sequence[StageRunner], routing: Routing) -> None:
        self.runners, self.routing = list(runners), routing
        self.busy: Counter[int] = Counter()
        self.assigned: dict[str, int] = {}  # stage -> the engine it was given this run
        self.guard = threading.Lock()

    def _pick(self, stage: Stage) -> int:
        with self.guard:
            local = Counter(self.assigned[p] for p in stage.parents if p in self.assigned)
            index = min(self.routing.eligible, key=lambda i: (self.busy[i], -local[i], i))
            self.busy[index] += 1
            self.assigned[stage.name] = index
            return index

    def __call__(self, stage: Stage, report: StateReport, run: Run | None = None) -> str:
        index = self._pick(stage)
        runner = self.runners[index]
        run = run or TaggedParents()
        try:
            report("building", f"on {self.routing.engines[index].name} ({self.routing.how()})")
            with self.guard:  # a parent built here this run may be pending: its children start from it here
                here = frozenset(p for p in stage.parents if self.assigned.get(p) == index)
            missing = [p for p in stage.parents if p not in here and not runner.engine.image_id(self._tag(p))]
            if missing:
                if not run.parents_tagged(stage):
                    raise StageSkipped(f"{stage.name}: a parent failed")
                for name in missing:
                    self._bring(runner, name, stage, report)
            return runner(stage, report, _OnEngine(run, here))
        finally:
            with self.guard:
                self.busy[index] -= 1

    def _tag(self, name: str) -> str:
        return self.runners[0].plan.stages[name].tag()

    def _bring(self, runner: StageRunner, name: str, needed_by: Stage, report: StateReport) -> None:
        """Stage name onto runner's engine from the registry cache, unless it is there already."""
        stage = runner.plan.stages[name]
        if runner.engine.image_id(stage.tag()) is None and runner.bring(stage, report) is None:
            raise StageFailed(
                needed_by.name,
                f"{name} is not in the registry cache {runner.registry.pull_from}",
                log_file=runner.log_file(needed_by),
                cause="each engine of a pool gets what others built through the registry cache: --cache-to",
            )

    def gather(self, names: Sequence[str], report: StateReport) -> None:
        """The named stages onto the first engine (the one whose tags the build prints)."""
        for name in names:
            self._bring(self.runners[0], name, self.runners[0].plan.stages[name], report)

    def drop_pending(self) -> None:
        for runner in self.runners:
            runner.drop_pending()

    @property
    def pulled(self) -> set[str]:
        return set().union(*(b.pulled for b in self.runners))
