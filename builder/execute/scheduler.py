"""The scheduler: stages in dependency order, independent ones at once (up to `jobs`).

A failure stops new starts; what depends on the failed stage is reported skipped, stages
already running finish, and the first failure is raised.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from builder.execute.progress import Reporter
from builder.execute.stage import StageFailed
from builder.plan.stage import Plan, Stage

BuildOne = Callable[[Stage, Callable[[str], None]], str]


@dataclass
class _Run:
    pending: list[Stage]
    done: set[str]
    image_ids: dict[str, str] = field(default_factory=dict)
    running: dict[concurrent.futures.Future[str], Stage] = field(default_factory=dict)
    failure: StageFailed | None = None

    def ready(self, jobs: int) -> Stage | None:
        if self.failure or len(self.running) >= jobs:
            return None
        return next((s for s in self.pending if all(p in self.done for p in s.parents)), None)


def schedule(
    plan: Plan,
    to_build: Collection[str],
    build_one: BuildOne,
    jobs: int,
    reporter: Reporter,
    why: Callable[[Stage], str],
    on_built: Callable[[Stage], None],
    outcome: Callable[[Stage], str] = lambda stage: "built",
) -> dict[str, str]:
    """Build the stages named in to_build; their image ids. Raises the first StageFailed."""
    run = _Run(pending=[s for s in plan.order() if s.name in to_build], done=set(plan.stages) - set(to_build))
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        while run.pending or run.running:
            stage = run.ready(jobs)
            if stage is not None:
                run.pending.remove(stage)
                reporter.update(stage.name, "building", why(stage))

                def report(state: str, name: str = stage.name) -> None:
                    reporter.update(name, state)

                run.running[pool.submit(build_one, stage, report)] = stage
                continue
            if not run.running:
                break
            _collect(run, reporter, on_built, outcome)
        for stage in run.pending:
            reporter.update(stage.name, "skipped")
    if run.failure:
        raise run.failure
    return run.image_ids


def _collect(run: _Run, reporter: Reporter, on_built: Callable[[Stage], None], outcome: Callable[[Stage], str]) -> None:
    finished, _ = concurrent.futures.wait(run.running, return_when=concurrent.futures.FIRST_COMPLETED)
    for future in finished:
        stage = run.running.pop(future)
        try:
            run.image_ids[stage.name] = future.result()
        except StageFailed as err:
            reporter.update(stage.name, "failed", err.reason)
            run.failure = run.failure or err
            continue
        on_built(stage)
        reporter.update(stage.name, outcome(stage), stage.key[:12])
        run.done.add(stage.name)
