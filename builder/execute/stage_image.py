"""One stage's image built by the engine, and the builds of it nothing is probed or tagged after:
its context written, its labels, the build itself (a failed RUN recorded, for `shell`), the
environment its scripts set added; `shell` opens on such a build of a failed stage's state, and
`verify-reproducible` compares two fresh ones."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from builder.engine import BuildEngine, BuildFailed, BuildSpec, EngineError
from builder.execute import compile_mounts, environment
from builder.execute.checkout_paths import in_checkout
from builder.execute.debug import failed_command, record_failure
from builder.execute.stage_checks import drop, shell_hint
from builder.execute.stage_log import StageLog, line_writer
from builder.execute.stage_normalise import Parent, normalised
from builder.inputs.contexts import write_context
from builder.model.errors import StackbuildError
from builder.plan.compile_cache import CompileCache, NoCompileCache
from builder.plan.plan_model import Plan, Stage, parent_arg
from builder.store.cache import Cache
from builder.verify.diagnose import diagnose, install_failure, step_failure


@dataclass
class StageImages:
    """Builds a stage's Dockerfile on the engine for the plan, its log under log_dir; StageRunner
    puts these builds in a run's order, with the registry cache, normalising, probes and tags."""

    plan: Plan
    engine: BuildEngine
    cache: Cache
    log_dir: Path
    # Whether component builds mount the compile cache (where the engine's builder takes mounts).
    compile_cache: bool = field(default=False, kw_only=True)

    def log_file(self, stage: Stage) -> Path:
        return self.log_dir / self.plan.stack.lower() / self.plan.arch.value / f"{stage.name}.log"

    def labels(self, stage: Stage) -> dict[str, str]:
        return {
            "org.stackbuild.stack": self.plan.stack,
            "org.stackbuild.stage": stage.name,
            "org.stackbuild.key": stage.key,
            "org.stackbuild.inputs": json.dumps(stage.inputs.as_record(), sort_keys=True),
        }

    def _dockerfile(self, stage: Stage, parents: Mapping[str, str], log: StageLog) -> str:
        """What is built of stage's Dockerfile: with the compile cache's mounts where it has one, the
        builds use it and the engine can mount it (said in its log either way)."""
        use = stage.compile_cache
        if isinstance(use, NoCompileCache):
            log.write(f"# compile cache: none ({use.reason})")
        if not isinstance(use, CompileCache):
            return stage.dockerfile
        if not self.compile_cache:
            log.write("# compile cache: off (--no-compile-cache)")
            return stage.dockerfile
        if not self.engine.mounts():
            log.write("# compile cache: off (the classic builder has no build-time mounts)")
            return stage.dockerfile
        try:
            tool = compile_mounts.tool_image(self.engine, self.cache, self.plan, use, parents["toolkit"], log.write)
        except BuildFailed as err:
            raise log.failed(f"cannot make the compile cache's tool image: {err}", log_tail=err.log_tail[-15:]) from err
        log.write(f"# compile cache: {use.cache_id} (its tool {tool})")
        return compile_mounts.mounted(stage, use, tool)

    def _context(self, stage: Stage, directory: Path, log: StageLog, dockerfile: str | None = None) -> None:
        """dockerfile: what _dockerfile gave (None: stage's own)."""
        try:
            write_context(directory, dockerfile or stage.dockerfile, stage.context, self.cache)
        except StackbuildError as err:  # a download, a bootstrap, a git fetch
            raise log.failed(str(err)) from err
        except OSError as err:
            raise log.failed(f"cannot write its build context: {err}") from err

    def _build(self, stage: Stage, context: Path, log: StageLog, args: dict[str, str]) -> str:
        spec = BuildSpec(self.labels(stage), self.plan.arch, stage.network, args)
        try:
            return self.engine.build(context, log.write, spec)
        except BuildFailed as err:
            # apt's or dpkg's words, or the build step's own and its output's: not the command stackbuild ran;
            # a source file named where the user edits it
            tail = in_checkout(err.log_tail, stage)
            reason = install_failure(tail) or step_failure(tail) or str(err)
            # A failed RUN can be looked at where it failed, `shell` saying what `build` said; other
            # failures (COPY, the engine) cannot.
            debug = ""
            if (command := failed_command(str(err))) is not None:
                record_failure(self.cache, self.plan, stage, reason, command)
                debug = shell_hint(self.plan, stage)
            raise log.failed(reason, log_tail=tail[-15:], cause=diagnose(err.log_tail), debug=debug) from err

    def _environment(self, stage: Stage, built: str, log: StageLog, keep_failed: bool = False) -> str:
        """The built image with the environment its scripts set (stages that have a EnvCapture); built
        is dropped when that fails, unless keep_failed (another job still reads it)."""
        if stage.env_capture is None:
            return built
        try:
            return environment.add(self.engine, built, stage.env_capture, log.write)
        except environment.EnvironmentUnreadable as err:
            if not keep_failed:
                drop(self.engine, stage, built)
            raise log.failed(str(err), cause=diagnose([str(err)])) from err
        except EngineError as err:
            if not keep_failed:
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
            self._context(stage, context, log, self._dockerfile(stage, parents, log))
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
