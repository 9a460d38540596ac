"""Building one stage: its context, the engine build, its probes, then (only then) its tag."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from builder.engine import BuildEngine, BuildFailed, BuildSpec, EngineError
from builder.execute import environment
from builder.execute.debug import failed_command, record_failure
from builder.execute.stage_checks import check_installs, drop, probe, shell_hint
from builder.execute.stage_log import Report, StageFailed, StageLog, StageSkipped, line_writer
from builder.execute.stage_normalise import Parent, normalised, prepare
from builder.execute.stage_registry import Answer, Pulling, RegistryCache, pulled, pushed
from builder.inputs.contexts import write_context
from builder.model.errors import StackbuildError
from builder.plan.stage import Plan, Stage, parent_arg
from builder.store.cache import Cache
from builder.verify.diagnose import diagnose, install_failure, step_failure


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
class StageBuilder:
    """Builds one stage at a time for a run; what the run did so far is its state (pulled, pending).
    Its jobs are their own modules: the checks (stage_checks), normalising (stage_normalise) and the
    registry cache (stage_registry); this class puts them in order."""

    plan: Plan
    engine: BuildEngine
    cache: Cache
    log_dir: Path
    registry: RegistryCache = field(default_factory=RegistryCache)
    pulled: set[str] = field(default_factory=set)  # stages taken from the registry cache
    pending: set[str] = field(default_factory=set)  # pending tags made by this run (drop_pending removes them)
    answers: Mapping[str, Answer] = field(default_factory=dict)  # the registry cache's, asked at the run's start

    def log_file(self, stage: Stage) -> Path:
        return self.log_dir / self.plan.stack.lower() / self.plan.arch.value / f"{stage.name}.log"

    def labels(self, stage: Stage) -> dict[str, str]:
        return {
            "org.stackbuild.stack": self.plan.stack,
            "org.stackbuild.stage": stage.name,
            "org.stackbuild.key": stage.key,
            "org.stackbuild.inputs": json.dumps(stage.inputs.as_record(), sort_keys=True),
        }

    def __call__(self, stage: Stage, report: Report, run: Run | None = None) -> str:
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

    def _build_new(self, stage: Stage, report: Report, run: Run, log_mode: str = "w") -> str:
        log_file = self.log_file(stage)
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with log_file.open(log_mode) as file, self.cache.scratch.temp_dir() as context:
            log = StageLog(stage.name, log_file, line_writer(file))
            started = time.monotonic()
            context_input = stage.inputs.context
            log.write(f"# stage {stage.name} key {stage.key}\n# context: {context_input.what} {context_input.sha256}")
            self._context(stage, context, log)
            log.write(f"# context ready in {time.monotonic() - started:.2f}s")
            built_on = {p: run.image_of(stage, self.plan.stages[p]) for p in stage.parents}
            image_id = self._build(stage, context, log, {parent_arg(p): ref for p, ref in built_on.items()})
            # A child starts on this image while it is normalised when it reads none of the files
            # normalising changes here (they see the same files); one FROM it is put over the normalised
            # one in turn, as this stage is over its FROM parent's (Parent.settled). Others wait for it.
            # One that only copies from it takes files, not its config: it starts before the
            # environment is added.
            prepared = prepare(self.engine, self.plan, stage, image_id, list(built_on.values()), log)
            early = frozenset(
                child.name
                for child in self.plan.children(stage.name)
                if prepared.changed is not None and not child.sees(stage.name, prepared.changed, prepared.links)
            )
            if stage.bake is not None and (
                copiers := {c for c in early if self.plan.stages[c].copies_only(stage.name)}
            ):
                self._built_as(stage, image_id, frozenset(copiers), run, log, started)
            image_id = self._environment(stage, image_id, log)
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

    def _environment(self, stage: Stage, built: str, log: StageLog) -> str:
        """The built image with the environment its scripts set (stages that have a Bake)."""
        if stage.bake is None:
            return built
        try:
            return environment.add(self.engine, built, stage.bake, log.write)
        except environment.EnvironmentUnreadable as err:
            drop(self.engine, stage, built)
            raise log.failed(str(err), cause=diagnose([str(err)])) from err
        except EngineError as err:
            drop(self.engine, stage, built)
            raise log.failed(f"cannot add the environment the scripts set: {err}") from err

    def build_state(self, stage: Stage, log_file: Path) -> str:
        """stage's Dockerfile (a failed one, cut before its failed step) built from its tagged parents,
        nothing probed or tagged; its image id. `stackbuild shell` opens there."""
        parents = {p: self.plan.stages[p].tag() for p in stage.parents}
        return self.build_untagged(stage, log_file, parents, "its state before the failed step did not build")

    def build_untagged(
        self, stage: Stage, log_file: Path, parents: Mapping[str, str], failing: str, fresh: bool = False
    ) -> str:
        """stage built from the given parent images, nothing probed or tagged; its image id (normalised
        when fresh: every step run again, none from the builder's cache, as `verify-reproducible` does)."""
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with log_file.open("w") as file, self.cache.scratch.temp_dir() as context:
            log = StageLog(stage.name, log_file, line_writer(file))
            self._context(stage, context, log)
            args = {parent_arg(p): image for p, image in parents.items()}
            spec = BuildSpec(self.labels(stage), self.plan.arch, stage.network, args, no_cache=fresh)
            try:
                built = self.engine.build(context, log.write, spec)
            except BuildFailed as err:
                raise log.failed(f"{failing}: {err}", log_tail=err.log_tail[-15:]) from err
            built = self._environment(stage, built, log)
            if not fresh:
                return built
            settled = [Parent(image, image) for image in parents.values()]
            return normalised(self.engine, self.cache, self.plan, stage, built, settled, log, remembered=False)

    def drop_pending(self) -> None:
        """Remove the run's pending tags (the images stay under their stage tags)."""
        for ref in sorted(self.pending):
            with contextlib.suppress(EngineError):  # left behind, it is harmless: no build looks at it
                self.engine.remove(ref)
        self.pending.clear()

    def bring(self, stage: Stage, report: Report) -> str | None:
        """A stage built on another engine of a pool, from the registry cache (probed, then tagged);
        None when it is not there. Its log gets a line, not a new log."""
        return self._pull(Pulling(self.engine, self.cache, self.plan, self.registry), stage, report, "a", lambda: True)

    def _pull(
        self, at: Pulling, stage: Stage, report: Report, log_mode: str, parents_tagged: Callable[[], bool]
    ) -> str | None:
        image_id = pulled(at, stage, report, self.log_file(stage), log_mode, parents_tagged)
        if image_id is not None:
            self.pulled.add(stage.name)
        return image_id

    def push_present(self, stage: Stage, report: Report) -> None:
        """A stage already here (its probes passed when it was tagged) to the registry cache too, so
        a machine that built before the cache existed fills it."""
        image_id = self.engine.image_id(stage.tag())
        if image_id and self.registry.push_to:
            pushed(self.engine, self.registry, stage, image_id, report, self.log_file(stage))

    def _context(self, stage: Stage, directory: Path, log: StageLog) -> None:
        try:
            write_context(directory, stage.dockerfile, stage.context, self.cache)
        except StackbuildError as err:  # a download, a bootstrap, a git fetch
            raise log.failed(str(err)) from err
        except OSError as err:
            raise log.failed(f"cannot write its build context: {err}") from err

    def _build(self, stage: Stage, context: Path, log: StageLog, args: dict[str, str]) -> str:
        spec = BuildSpec(self.labels(stage), self.plan.arch, stage.network, args)
        try:
            return self.engine.build(context, log.write, spec)
        except BuildFailed as err:
            # A failed RUN can be looked at where it failed; other failures (COPY, the engine) cannot.
            debug = ""
            if (command := failed_command(str(err))) is not None:
                record_failure(self.cache, self.plan, stage, str(err), command)
                debug = shell_hint(self.plan, stage)
            # apt's or dpkg's words, or the build step's own and its output's: not the command stackbuild ran
            reason = install_failure(err.log_tail) or step_failure(err.log_tail) or str(err)
            raise log.failed(reason, log_tail=err.log_tail[-15:], cause=diagnose(err.log_tail), debug=debug) from err
