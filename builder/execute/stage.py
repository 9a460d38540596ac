"""Building one stage: its context, the engine build, its probes, then (only then) its tag."""

from __future__ import annotations

import contextlib
import json
import tarfile
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

from builder.engine import BuildEngine, BuildFailed, BuildSpec, EngineError
from builder.execute import environment
from builder.execute.debug import failed_command, record_failure
from builder.execute.normalise import normalise, normalise_dirs
from builder.inputs.contexts import write_context
from builder.model.arch import Arch
from builder.model.canonical import digest
from builder.model.errors import LoggedFailure, StackbuildError
from builder.plan.stage import Plan, Stage, parent_arg
from builder.store.cache import Cache
from builder.verify.diagnose import diagnose, install_failure
from builder.verify.installs import added_files, collisions, installed_files
from builder.verify.probes import run_probes


class Report(Protocol):
    """A stage's state for the progress display, with an optional note (e.g. which engine)."""

    def __call__(self, state: str, note: str = "") -> None: ...


class StageFailed(LoggedFailure):
    """A stage that did not build: why, the lines of its log that say so, where the whole log is, a
    likely cause the diagnosis knows, and how to look inside what it built."""

    def __init__(
        self,
        stage: str,
        reason: str,
        *,
        log_file: Path,
        log_tail: Sequence[str] = (),
        cause: str | None = None,
        debug: str = "",
    ) -> None:
        lines = [f"stage {stage} failed: {reason}"]
        if log_tail:
            lines += ["last lines of its log:", *(f"  | {line}" for line in log_tail)]
        lines.append(f"full log: {log_file}")
        if cause:
            lines.append(f"likely cause: {cause}")
        if debug:
            lines.append(f"to look inside: {debug}")
        super().__init__("\n".join(lines))
        self.stage, self.reason, self.cause = stage, reason, cause


class StageSkipped(StackbuildError):
    """A parent failed its probes after this stage was built from it: nothing is tagged."""


class Run(Protocol):
    """What one stage's build learns from the run it is part of: which image each parent is (its pending
    image while its probes run), and whether every parent was tagged in the end."""

    def image_of(self, parent: Stage) -> str: ...

    def built(self, stage: Stage) -> None:
        """stage's image is there under its pending tag: its children may build from it."""
        ...

    def parents_tagged(self, stage: Stage) -> bool:
        """Wait until every parent of stage is tagged or failed; whether all were tagged."""
        ...


class TaggedParents:
    """A stage built alone: its parents are tagged already."""

    def image_of(self, parent: Stage) -> str:
        return parent.tag()

    def built(self, stage: Stage) -> None:
        pass

    def parents_tagged(self, stage: Stage) -> bool:
        return True


@dataclass(frozen=True)
class RegistryCache:
    """Where stage images are looked up before building (pull_from) and sent after their probes pass
    (push_to): REGISTRY/REPO, each stage as REGISTRY/REPO/<stage>:<key>. Separate, as CI pushes and
    laptops pull."""

    pull_from: str | None = None
    push_to: str | None = None

    @staticmethod
    def ref(where: str, stage: Stage) -> str:
        return f"{where}/{stage.name}:{stage.key}"


@dataclass
class StageBuilder:
    """Builds one stage at a time for a run; what the run did so far is its state (pulled, pending)."""

    plan: Plan
    engine: BuildEngine
    cache: Cache
    log_dir: Path
    registry: RegistryCache = field(default_factory=RegistryCache)
    pulled: set[str] = field(default_factory=set)  # stages taken from the registry cache
    pending: set[str] = field(default_factory=set)  # pending tags made by this run (drop_pending removes them)

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

        Built, the image gets its pending tag and the run is told, so children may build from it while
        its probes run; it is tagged once its probes passed and every parent was tagged.
        Another build of the same stage (another stackbuild at once) holds its lock: when it is
        released, the image it tagged is taken instead of building it again."""
        try:
            with self.cache.lock(f"stage-{stage.key}"):
                done = self.engine.image_id(stage.tag())
                if done:
                    return done
                run = run or TaggedParents()
                if (pulled := self._pull(stage, report, run=run)) is not None:
                    return pulled
                # After a registry cache miss, the build's log follows what the pull attempt wrote.
                image_id = self._build_new(stage, report, run, "a" if self.registry.pull_from else "w")
                self._push(stage, image_id, report)
                return image_id
        except EngineError as err:  # the engine failed under this stage (gone, restarted): the stage fails, named
            raise StageFailed(stage.name, f"the engine failed: {err}", log_file=self.log_file(stage)) from err
        except OSError as err:  # a full disk under the log, the lock or the context: the stage fails, named
            reason = f"cannot write its build context or log: {err.strerror or err}"
            raise StageFailed(stage.name, reason, log_file=self.log_file(stage)) from err

    def _build_new(self, stage: Stage, report: Report, run: Run, log_mode: str = "w") -> str:
        log_file = self.log_file(stage)
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with log_file.open(log_mode) as log, tempfile.TemporaryFile() as context:

            def write(line: str) -> None:
                log.write(line + "\n")
                log.flush()

            started = time.monotonic()
            context_input = stage.inputs.context
            write(f"# stage {stage.name} key {stage.key}\n# context: {context_input.what} {context_input.sha256}")
            if stage.kind in ("devel", "runtime"):  # the two images that merge the components' installs
                self._check_installs(stage, log_file, run)
            self._context(stage, context, log_file)
            write(f"# context ready in {time.monotonic() - started:.2f}s")
            parents = {parent_arg(p): run.image_of(self.plan.stages[p]) for p in stage.parents}
            image_id = self._build(stage, context, write, log_file, parents)
            image_id = self._environment(stage, image_id, write, log_file)
            write(f"# image built in {time.monotonic() - started:.2f}s")
            parent_images = [run.image_of(self.plan.stages[p]) for p in stage.parents]
            image_id = self._normalise(stage, image_id, parent_images, write, log_file)
            self.engine.tag(image_id, stage.pending_tag())
            self.pending.add(stage.pending_tag())
            run.built(stage)
            report("probing")
            self._probe(stage, image_id, write, log_file)
            write(f"# built and probed in {time.monotonic() - started:.2f}s")
            if not run.parents_tagged(stage):
                write("# a parent failed its probes: this image is dropped")
                self._drop(stage, image_id)
                raise StageSkipped(f"{stage.name}: a parent failed")
        self.engine.tag(image_id, stage.tag())
        return image_id

    def _environment(self, stage: Stage, built: str, write: Callable[[str], None], log_file: Path) -> str:
        """The built image with the environment its scripts set (stages that have a Bake)."""
        if stage.bake is None:
            return built
        try:
            spec = BuildSpec(self.labels(stage), self.plan.arch)
            return environment.add(self.engine, built, stage.name, stage.bake, spec, write)
        except environment.EnvironmentUnreadable as err:
            self._drop(stage, built)
            raise StageFailed(stage.name, str(err), log_file=log_file, cause=diagnose([str(err)])) from err
        except BuildFailed as err:
            self._drop(stage, built)
            reason = f"cannot add the environment the scripts set: {err}"
            raise StageFailed(stage.name, reason, log_file=log_file, log_tail=err.log_tail[-15:]) from err

    def _normalise(
        self, stage: Stage, built: str, parents: list[str], write: Callable[[str], None], log_file: Path
    ) -> str:
        """The built image normalised (builder.execute.normalise): the same inputs, the same image id."""
        epoch = self.plan.source_date_epoch
        started = time.monotonic()
        try:
            parent_layers = frozenset(d for image in parents for d in self.engine.inspect(image).layers)
            if stage.kind == "base" and self.plan.base_image:  # the pinned image's layers stay as pulled
                parent_layers |= self._pinned_layers(self.plan.base_image)
            with self.cache.temp_dir() as scratch:
                on_disk = self.engine.layer_dirs(built)
                normal = normalise_dirs(on_disk, parent_layers, epoch, scratch) if on_disk else None
                how = "from the data root"
                if normal is None:
                    how = "through docker save"
                    with self.engine.save(built) as saved:
                        normal = normalise(saved, parent_layers, epoch, scratch)
                if normal.image_id != built:
                    self.engine.load(normal.archive())
                    with contextlib.suppress(EngineError):  # the build's own image: nothing names it
                        self.engine.remove(built)
        except (EngineError, OSError, tarfile.TarError, ValueError, KeyError, IndexError) as err:
            with contextlib.suppress(EngineError):  # the build's own image: nothing else names it
                self.engine.remove(built)
            raise StageFailed(stage.name, f"cannot normalise its image: {err}", log_file=log_file) from err
        write(f"# normalised to {normal.image_id} in {time.monotonic() - started:.2f}s {how} (was {built})")
        return normal.image_id

    def _pinned_layers(self, image: str) -> frozenset[str]:
        """The pinned base image's layers, pulled when the engine lacks it (BuildKit keeps what it pulls to itself)."""
        if self.engine.image_id(image) is None and self.engine.pull(image, self.plan.arch) is None:
            raise EngineError(f"the base image {image} is not in its registry")
        return frozenset(self.engine.inspect(image).layers)

    def _shell(self, stage: Stage) -> str:
        arch = "" if self.plan.arch == Arch.host() else f" --arch {self.plan.arch}"
        return f"stackbuild shell{arch} {self.plan.stack} {stage.name}"

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
        with log_file.open("w") as log, tempfile.TemporaryFile() as context:

            def write(line: str) -> None:
                log.write(line + "\n")
                log.flush()

            self._context(stage, context, log_file)
            args = {parent_arg(p): image for p, image in parents.items()}
            spec = BuildSpec(self.labels(stage), self.plan.arch, stage.network, args, no_cache=fresh)
            try:
                built = self.engine.build(context, write, spec)
            except BuildFailed as err:
                raise StageFailed(
                    stage.name, f"{failing}: {err}", log_file=log_file, log_tail=err.log_tail[-15:]
                ) from err
            built = self._environment(stage, built, write, log_file)
            if not fresh:
                return built
            return self._normalise(stage, built, list(parents.values()), write, log_file)

    def _drop(self, stage: Stage, image_id: str) -> None:
        """An image that failed: removed, or (while children built from it still hold it) at least untagged."""
        try:
            self.engine.remove(image_id)
        except EngineError:
            with contextlib.suppress(EngineError):
                self.engine.remove(stage.pending_tag())

    def drop_pending(self) -> None:
        """Remove the run's pending tags (the images stay under their stage tags)."""
        for ref in sorted(self.pending):
            with contextlib.suppress(EngineError):  # left behind, it is harmless: no build looks at it
                self.engine.remove(ref)
        self.pending.clear()

    def bring(self, stage: Stage, report: Report) -> str | None:
        """A stage built on another engine of a pool, from the registry cache (probed, then tagged);
        None when it is not there. Its log gets a line, not a new log."""
        return self._pull(stage, report, "a")

    def _pull(self, stage: Stage, report: Report, log_mode: str = "w", run: Run | None = None) -> str | None:
        """The stage from the registry cache, probed before it is tagged: an image that fails its probes
        (a bad push) is dropped and the stage built here instead. None when it is not there."""
        if not self.registry.pull_from:
            return None
        ref = RegistryCache.ref(self.registry.pull_from, stage)
        log_file = self.log_file(stage)
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with log_file.open(log_mode) as log:

            def write(line: str) -> None:
                log.write(line + "\n")
                log.flush()

            report("pulling")
            try:
                image_id = self.engine.pull(ref, self.plan.arch)
            except EngineError as err:  # the cache is an optimisation: an unreachable registry means building
                write(f"# registry cache: {err}; building instead")
                return None
            if image_id is None:
                write(f"# registry cache: {ref} is not there; building")
                return None
            write(f"# pulled {ref} ({image_id})")
            report("probing")
            try:
                self._probe(stage, image_id, write, log_file)
            except StageFailed as err:  # the image is gone with its registry name
                write(f"# the pulled image fails its probes ({err.reason}): building instead")
                return None
            if run is not None and not run.parents_tagged(stage):  # tagged only after its parents, as if built
                write("# a parent failed its probes: the pulled image is dropped")
                self._drop(stage, image_id)
                raise StageSkipped(f"{stage.name}: a parent failed")
        self.engine.tag(image_id, stage.tag())
        self.engine.remove(ref)  # only the registry name: the image stays under the stage's tag
        self.pulled.add(stage.name)
        return image_id

    def push_present(self, stage: Stage, report: Report) -> None:
        """A stage already here (its probes passed when it was tagged) to the registry cache too, so
        a machine that built before the cache existed fills it."""
        image_id = self.engine.image_id(stage.tag())
        if image_id and self.registry.push_to:
            self._push(stage, image_id, report)

    def _push(self, stage: Stage, image_id: str, report: Report) -> None:
        """After its probes passed and it was tagged here: the stage to the registry cache (a registry
        tag appears only once every layer is there)."""
        if not self.registry.push_to:
            return
        ref = RegistryCache.ref(self.registry.push_to, stage)
        report("pushing")
        try:
            digest_pushed = self.engine.push(image_id, ref)
        except EngineError as err:
            reason = f"cannot push to the registry cache: {err}"
            raise StageFailed(stage.name, reason, log_file=self.log_file(stage)) from err
        self.log_file(stage).parent.mkdir(parents=True, exist_ok=True)
        with self.log_file(stage).open("a") as log:
            log.write(f"# pushed {ref} ({digest_pushed})\n")

    def _check_installs(self, stage: Stage, log_file: Path, run: Run) -> None:
        """Before the images that merge every component: no file installed by two of them. Checked once
        per set of stage images (both finals, and later builds of them, find the record)."""
        plan = self.plan
        if not plan.installs:
            return
        checked = digest({name: plan.stages[name].key for name in ["toolkit", *sorted(plan.installs)]})
        with self.cache.lock(f"installs-{checked}"):
            if self.cache.read_record("installs", checked) is None:
                self._list_and_compare_installs(stage, log_file, run)
                self.cache.write_record({"collisions": 0}, "installs", checked)

    def _list_and_compare_installs(self, stage: Stage, log_file: Path, run: Run) -> None:
        plan = self.plan
        every_path = sorted({path for paths in plan.installs.values() for path in paths})
        try:
            listings = {
                cid: installed_files(self.engine, run.image_of(plan.stages[cid]), p) for cid, p in plan.installs.items()
            }
            toolkit = installed_files(self.engine, run.image_of(plan.stages["toolkit"]), every_path)
        except EngineError as err:
            raise StageFailed(stage.name, f"cannot list the components' installs: {err}", log_file=log_file) from err
        needs = {cid: set(deps) for cid, deps in plan.needs.items()}
        if problems := collisions(added_files(listings, toolkit, needs)):
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            reason = f"{problems[0]}{more}: each file belongs to one component's installs"
            raise StageFailed(stage.name, reason, log_file=log_file, log_tail=problems[1:10])

    def _context(self, stage: Stage, out: IO[bytes], log_file: Path) -> None:
        try:
            write_context(out, stage.dockerfile, stage.context, self.cache)
        except StackbuildError as err:  # a download, a bootstrap, a git fetch
            raise StageFailed(stage.name, str(err), log_file=log_file) from err
        except OSError as err:
            raise StageFailed(stage.name, f"cannot write its build context: {err}", log_file=log_file) from err
        out.seek(0)

    def _build(
        self, stage: Stage, context: IO[bytes], write: Callable[[str], None], log_file: Path, args: dict[str, str]
    ) -> str:
        spec = BuildSpec(self.labels(stage), self.plan.arch, stage.network, args)
        try:
            return self.engine.build(context, write, spec)
        except BuildFailed as err:
            tail = err.log_tail[-15:]
            # A failed RUN can be looked at where it failed; other failures (COPY, the engine) cannot.
            debug = ""
            if (command := failed_command(str(err))) is not None:
                record_failure(self.cache, self.plan, stage, str(err), command)
                debug = self._shell(stage)
            reason = install_failure(err.log_tail) or str(err)  # apt's or dpkg's words, not the command
            raise StageFailed(
                stage.name, reason, log_file=log_file, log_tail=tail, cause=diagnose(err.log_tail), debug=debug
            ) from err

    def _probe(self, stage: Stage, image_id: str, write: Callable[[str], None], log_file: Path) -> None:
        try:
            results = run_probes(self.engine, image_id, stage.probe_workdir, stage.probes)
        except EngineError as err:
            self._drop(stage, image_id)
            raise StageFailed(stage.name, f"cannot run its probes: {err}", log_file=log_file) from err
        for result in results:
            write(f"# probe {result.name}: {'ok' if result.ok else 'FAILED'}: {result.message}")
        failed = [r for r in results if not r.ok]
        if failed:
            self._drop(stage, image_id)
            first = failed[0]
            reason = f"probe {first.name} failed: {first.message}"
            record_failure(self.cache, self.plan, stage, reason, None)
            raise StageFailed(
                stage.name, reason, log_file=log_file, cause=diagnose([first.message]), debug=self._shell(stage)
            )
