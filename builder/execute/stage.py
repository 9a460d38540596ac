"""Building one stage for a run: from the registry cache or by the engine (stage_image), normalised,
probed, then (only then) tagged."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from builder.engine import EngineError
from builder.execute.stage_checks import check_installs, drop, probe
from builder.execute.stage_image import StageImages
from builder.execute.stage_log import StageFailed, StageLog, StageSkipped, StateReport, line_writer
from builder.execute.stage_normalise import Parent, normalised, prepare
from builder.execute.stage_registry import Answer, Pulling, RegistryCache, pulled, pushed
from builder.plan.plan_model import Stage, parent_arg


class Run(Protocol):
    """What one stage's build learns from the run it is part of: which image each parent is (as built,
    or normalised, while it is normalised and probed), and whether every parent was tagged in the end."""

    def image_of(self, stage: Stage, parent: Stage) -> str:
        """The image of parent that stage builds on now."""
        ...

    def built(self, stage: Stage, for_children: frozenset[str]) -> None:
        """stage is built: those of its children named may build on its image as built (its as-built
        tag); the others wait until it is normalised (its pending tag)."""
        ...

    def normalised(self, stage: Stage) -> None:
        """stage's image is normalised (its pending tag): what its children are put over."""
        ...

    def normalised_of(self, parent: Stage) -> str | None:
        """Wait until parent is normalised; its normalised image (None: it failed first)."""
        ...

    def parents_tagged(self, stage: Stage) -> bool:
        """Wait until every parent of stage is tagged or failed; whether all were tagged."""
        ...

    def parents_built(self, stage: Stage) -> bool:
        """Wait until every parent of stage is built (its image there, pending or tagged) or failed;
        whether all were built. A stage started before its parents (its image was in the registry
        cache) waits here when it must be built after all."""
        ...


class TaggedParents:
    """A stage built alone: its parents are tagged already."""

    def image_of(self, stage: Stage, parent: Stage) -> str:
        return parent.tag()

    def built(self, stage: Stage, for_children: frozenset[str]) -> None:
        pass

    def normalised(self, stage: Stage) -> None:
        pass

    def normalised_of(self, parent: Stage) -> str | None:
        return parent.tag()

    def parents_tagged(self, stage: Stage) -> bool:
        return True

    def parents_built(self, stage: Stage) -> bool:
        return True


@dataclass
class StageRunner(StageImages):
    """Builds one stage at a time for a run; what the run did so far is its state (pulled, pending).
    Its jobs are their own modules: the engine build (stage_image), the checks (stage_checks),
    normalising (stage_normalise) and the registry cache (stage_registry); this class puts them in order."""

    registry: RegistryCache = field(default_factory=RegistryCache)
    pulled: set[str] = field(default_factory=set)  # stages taken from the registry cache
    pending: set[str] = field(default_factory=set)  # pending tags made by this run (drop_pending removes them)
    answers: Mapping[str, Answer] = field(default_factory=dict)  # the registry cache's, asked at the run's start

    def __call__(self, stage: Stage, report: StateReport, run: Run | None = None) -> str:
        """Build, probe and tag stage; its image id. Raises StageFailed, naming the log, or StageSkipped.

        Built, the image gets its as-built tag and the run is told, so children may build on it while
        it is normalised (over its parents' normalised images) and probed; it is tagged once its
        probes passed and every parent was tagged.
        Another build of the same stage (another stackbuild at once) holds its lock: when it is
        released, the image it tagged is taken instead of building it again."""
        try:
            with self.cache.locks.exclusive(f"stage-{stage.key}"):
                done = self.engine.image_id(stage.tag())
                if done:
                    return done
                run = run or TaggedParents()
                at = Pulling(self.engine, self.cache, self.plan, self.registry, self.answers)
                if (image_id := self._pull(at, stage, report, "w", lambda: run.parents_tagged(stage))) is not None:
                    return image_id
                if not run.parents_built(stage):
                    raise StageSkipped(f"{stage.name}: a parent failed")
                # After a registry cache miss, the build's log follows what the pull attempt wrote.
                image_id = self._build_new(stage, report, run, "a" if self.registry.pull_from else "w")
                pushed(self.engine, self.registry, stage, image_id, report, self.log_file(stage))
                return image_id
        except EngineError as err:  # the engine failed under this stage (gone, restarted): the stage fails, named
            raise StageFailed(stage.name, f"the engine failed: {err}", log_file=self.log_file(stage)) from err
        except OSError as err:  # a full disk under the log, the lock or the context: the stage fails, named
            reason = f"cannot write its build context or log: {err.strerror or err}"
            raise StageFailed(stage.name, reason, log_file=self.log_file(stage)) from err

    def _build_new(self, stage: Stage, report: StateReport, run: Run, log_mode: str = "w") -> str:
        log_file = self.log_file(stage)
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with log_file.open(log_mode) as file, self.cache.scratch.temp_dir() as context:
            log = StageLog(stage.name, log_file, line_writer(file))
            started = time.monotonic()
            context_input = stage.inputs.context
            log.write(f"# stage {stage.name} key {stage.key}\n# context: {context_input.what} {context_input.sha256}")
            built_on = {p: run.image_of(stage, self.plan.stages[p]) for p in stage.parents}
            self._context(stage, context, log, self._dockerfile(stage, built_on, log))
            log.write(f"# context ready in {time.monotonic() - started:.2f}s")
            image_id = self._build(stage, context, log, {parent_arg(p): ref for p, ref in built_on.items()})
            # A child starts on this image while it is normalised when it reads none of the files
            # normalising changes here (they see the same files); one FROM it is put over the normalised
            # one in turn, as this stage is over its FROM parent's (Parent.settled). Others wait for it.
            # One that only copies from it takes files, not its config: it starts before the
            # environment is added.
            with ThreadPoolExecutor(1, thread_name_prefix=f"environment-{stage.name}") as beside:
                # Its environment is read (in a container) and set while its layers are read from the
                # data root: neither changes what the other reads, and neither removes the image
                # while the other reads it (_failed_beside does, once both ended).
                configured = (
                    beside.submit(self._environment, stage, image_id, log, keep_failed=True)
                    if stage.env_capture
                    else None
                )
                try:
                    below, keep_failed = list(built_on.values()), configured is not None
                    prepared = prepare(self.engine, self.plan, stage, image_id, below, log, keep_failed=keep_failed)
                    early = frozenset(
                        child.name
                        for child in self.plan.children(stage.name)
                        if prepared.changed is not None and not child.sees(stage.name, prepared.changed, prepared.links)
                    )
                    if configured is not None and (
                        copiers := {c for c in early if self.plan.stages[c].copies_only(stage.name)}
                    ):
                        self._built_as(stage, image_id, frozenset(copiers), run, log, started)
                    image_id = configured.result() if configured is not None else image_id
                except BaseException:
                    self._failed_beside(stage, configured, image_id)
                    raise
            prepared = prepared.under(self.engine, image_id)
            log.write(f"# image built in {time.monotonic() - started:.2f}s")
            if early:
                self._built_as(stage, image_id, early, run, log, started)
            else:
                run.built(stage, early)
            # It waits for the parent it is FROM to be normalised (it goes over that), not for those it
            # copies from; the two images that merge the components' installs compare them all.
            merges = stage.kind in ("devel", "runtime")
            parents = [
                self._normalised_parent(stage, p, ref, run)
                if merges or ref == prepared.from_image
                else Parent(ref, ref)
                for p, ref in built_on.items()
            ]
            if merges:
                settled = {name: parent.settled for name, parent in zip(built_on, parents, strict=True)}
                check_installs(self.engine, self.cache, self.plan, self._settled_in(settled, stage, run), log)
            image_id = normalised(
                self.engine,
                self.cache,
                self.plan,
                stage,
                image_id,
                parents,
                log,
                keep_built=bool(early),
                prepared=prepared,
            )
            self.engine.tag(image_id, stage.pending_tag())
            self.pending.add(stage.pending_tag())
            run.normalised(stage)
            report("probing")
            probe(self.engine, self.cache, self.plan, stage, image_id, log)
            log.write(f"# built and probed in {time.monotonic() - started:.2f}s")
            if not run.parents_tagged(stage):
                log.write("# a parent failed its probes: this image is dropped")
                drop(self.engine, stage, image_id)
                raise StageSkipped(f"{stage.name}: a parent failed")
        self.engine.tag(image_id, stage.tag())
        return image_id

    def _failed_beside(self, stage: Stage, configured: Future[str] | None, built: str) -> None:
        """When reading its layers or adding its environment failed (the first to fail is reported, the
        layers' first): once the environment ended, the image it made and built are removed."""
        if configured is None:
            return  # prepare removed built
        try:
            made = configured.result()
        except Exception:  # it failed: it made no image
            made = built
        if made != built:
            with contextlib.suppress(EngineError):
                self.engine.remove(made)
        drop(self.engine, stage, built)

    def _built_as(
        self, stage: Stage, image_id: str, children: frozenset[str], run: Run, log: StageLog, started: float
    ) -> None:
        """image_id under stage's as-built tag, for those children to build on."""
        self.engine.tag(image_id, stage.as_built_tag())
        self.pending.add(stage.as_built_tag())
        log.write(f"# as built for {', '.join(sorted(children))} in {time.monotonic() - started:.2f}s")
        run.built(stage, children)

    def _settled_in(self, settled: dict[str, str], stage: Stage, run: Run) -> Callable[[Stage], str]:
        """The settled image of a stage the installs check reads: a parent's, or (the toolkit, which is no
        parent of a runtime image that installs CANN itself) the run's, once it is settled."""

        def image_of(of: Stage) -> str:
            found = settled.get(of.name) or run.normalised_of(of)
            if found is None:
                raise StageSkipped(f"{stage.name}: {of.name} failed")
            return found

        return image_of

    def _normalised_parent(self, stage: Stage, parent: str, built_on: str, run: Run) -> Parent:
        settled = run.normalised_of(self.plan.stages[parent])
        if settled is None:
            raise StageSkipped(f"{stage.name}: a parent failed")
        return Parent(built_on, settled)

    def drop_pending(self) -> None:
        """Remove the run's pending tags (the images stay under their stage tags)."""
        for ref in sorted(self.pending):
            with contextlib.suppress(EngineError):  # left behind, it is harmless: no build looks at it
                self.engine.remove(ref)
        self.pending.clear()

    def bring(self, stage: Stage, report: StateReport) -> str | None:
        """A stage built on another engine of a pool, from the registry cache (probed, then tagged);
        None when it is not there. Its log gets a line, not a new log."""
        return self._pull(Pulling(self.engine, self.cache, self.plan, self.registry), stage, report, "a", lambda: True)

    def _pull(
        self, at: Pulling, stage: Stage, report: StateReport, log_mode: str, parents_tagged: Callable[[], bool]
    ) -> str | None:
        image_id = pulled(at, stage, report, self.log_file(stage), log_mode, parents_tagged)
        if image_id is not None:
            self.pulled.add(stage.name)
        return image_id

    def push_present(self, stage: Stage, report: StateReport) -> None:
        """A stage already here (its probes passed when it was tagged) to the registry cache too, so
        a machine that built before the cache existed fills it."""
        image_id = self.engine.image_id(stage.tag())
        if image_id and self.registry.push_to:
            pushed(self.engine, self.registry, stage, image_id, report, self.log_file(stage))
