"""A build as a chain of small steps, each taking the previous step's value:

    resolve_inputs -> make_plan -> find_cached -> execute -> tag_finals -> smoke

The first two live in builder.plan; the rest here. No step hands data back up the chain.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from builder.engine import BuildEngine, Engine, EngineError
from builder.execute.pool import EnginePool
from builder.execute.progress import Reporter
from builder.execute.routing import Routing, route
from builder.execute.scheduler import schedule
from builder.execute.stage import StageRunner
from builder.execute.stage_registry import Answer, RegistryCache, asked_at_once
from builder.manifest.model import Smoke
from builder.model.canonical import digest
from builder.model.errors import InputError
from builder.model.say import Say
from builder.plan.plan_model import FINALS, Plan
from builder.plan.why import record_build, why
from builder.store.cache import Cache
from builder.verify.smoke import SmokeResult, run_smoke


@dataclass(frozen=True, kw_only=True)
class BuildOptions:
    jobs: int  # per engine
    live: bool
    log_dir: Path
    registry: RegistryCache = field(default_factory=RegistryCache)
    # More engines to spread the stages over (name, engine), sharing images through the registry cache,
    # those of the plan's architecture only when there are any; engine_name names the first (the one
    # the build is given).
    more_engines: tuple[tuple[str, BuildEngine], ...] = ()
    engine_name: str = "the local engine"
    devices: tuple[str, ...] = ()  # the host's NPU device nodes a smoke gets (none: its launch is skipped)
    device_groups: tuple[int, ...] = ()  # the host's NPU group, added with them (a user image opens them)
    compile_cache: bool = True  # component builds mount their compile cache where they have one (--no-compile-cache)


@dataclass(frozen=True)
class Work:
    """A plan and what of it is missing: the stages to build, and the image ids of the present ones met."""

    plan: Plan
    to_build: frozenset[str]
    present: Mapping[str, str]


@dataclass(frozen=True)
class StagesBuilt:
    plan: Plan
    image_ids: Mapping[str, str]
    built: tuple[str, ...]
    cached: tuple[str, ...]
    pulled: tuple[str, ...] = ()


@dataclass(frozen=True)
class Tagged:
    built: StagesBuilt
    tags: Mapping[str, str]  # final stage -> tag


def find_cached(plan: Plan, engine: Engine) -> Work:
    """Walking down from the final images, a present image ends the walk: its key covers every stage under it."""
    to_build: set[str] = set()
    present: dict[str, str] = {}

    def visit(name: str) -> None:
        if name in to_build or name in present:
            return
        image_id = engine.image_id(plan.stages[name].tag())
        if image_id:
            present[name] = image_id
            return
        to_build.add(name)
        for parent in plan.stages[name].parents:
            visit(parent)

    for final in FINALS:
        visit(final)
    return Work(plan, frozenset(to_build), present)


def execute(work: Work, engine: BuildEngine, cache: Cache, options: BuildOptions, say: Say) -> StagesBuilt:
    plan = work.plan
    for line in plan.drift:
        say(f"[stackbuild] note: {line}")
    if plan.drift:
        say("[stackbuild] note: what the working tree holds is built, not what is locked (--frozen refuses)")
    build_one = StageRunner(plan, engine, cache, options.log_dir, options.registry, compile_cache=options.compile_cache)
    routing = route(plan.arch, [(options.engine_name, engine), *options.more_engines])
    say(f"[stackbuild] {routing.line()}")
    pool = _pool(build_one, options, routing)
    outcomes: dict[str, str] = {}  # each stage built here: built or pulled, as it finished
    try:
        if options.registry.pull_from and not pool:  # a pool's engines find in the cache what the others push meanwhile
            build_one.answers = _asked(work, engine, options.registry.pull_from, say)
        with Reporter(plan.stages, options.live) as reporter:
            for stage in plan.order():
                if stage.name not in work.to_build:
                    if options.registry.push_to:
                        build_one.push_present(stage, functools.partial(reporter.update, stage.name))
                    reporter.update(stage.name, "cached", stage.key[:12])
                    record_build(cache, plan, stage)
            runner = pool or build_one
            try:
                image_ids = schedule(
                    plan,
                    work.to_build,
                    runner,
                    options.jobs * len(routing.eligible),
                    reporter,
                    why=lambda stage: why(cache, plan, stage),
                    on_built=lambda stage: record_build(cache, plan, stage),
                    outcome=lambda stage: outcomes.setdefault(
                        stage.name, "pulled" if stage.name in runner.pulled else "built"
                    ),
                    early=lambda stage: isinstance(build_one.answers.get(stage.name), str),
                )
                if pool:  # the finals onto the engine whose tags the build prints, by their ids there
                    pool.gather([f for f in FINALS if f in work.to_build], _unreported)
                    image_ids |= {
                        f: engine.image_id(plan.stages[f].tag()) or image_ids[f] for f in FINALS if f in image_ids
                    }
            finally:
                runner.drop_pending()
    finally:
        _drop_untaken(build_one, engine)
    # Each stage's outcome as the scheduler finished it, not as the display shows it.
    pulled = tuple(name for name in plan.stages if outcomes.get(name) == "pulled")
    built = tuple(name for name in plan.stages if outcomes.get(name) == "built")
    cached = tuple(name for name in plan.stages if name not in work.to_build)
    return StagesBuilt(plan, _named(plan, {**work.present, **image_ids}, engine), built, cached, pulled)


def _named(plan: Plan, image_ids: dict[str, str], engine: Engine) -> dict[str, str]:
    """Also the stages under a cached final that the engine still holds: the record names each image it can."""
    unwalked = (name for name in plan.stages if name not in image_ids)
    return image_ids | {name: found for name in unwalked if (found := engine.image_id(plan.stages[name].tag()))}


def _asked(work: Work, engine: Engine, where: str, say: Say) -> dict[str, Answer]:
    """The registry cache's answers for the stages to build, asked at once."""
    to_pull = [stage for stage in work.plan.order() if stage.name in work.to_build]
    say(f"[stackbuild] registry cache {where}: asking for {len(to_pull)} stage(s) at once")
    started = time.monotonic()
    answers = asked_at_once(engine, where, to_pull, work.plan.arch)
    there = sum(isinstance(answer, str) for answer in answers.values())
    say(f"[stackbuild] registry cache: {there} of {len(to_pull)} there, pulled in {time.monotonic() - started:.1f}s")
    return answers


def _drop_untaken(build_one: StageRunner, engine: Engine) -> None:
    """The registry names of images pulled at the start that no stage took (a parent failed): only
    the names go (a taken image keeps its stage tag)."""
    where = build_one.registry.pull_from
    for name, answer in build_one.answers.items():
        if where and isinstance(answer, str) and name not in build_one.pulled:
            with contextlib.suppress(EngineError):
                engine.remove(RegistryCache.ref(where, build_one.plan.stages[name]))


def _unreported(state: str, note: str = "") -> None:
    """The finals' moves between engines: their stage logs say it; the display keeps their outcome."""


def _pool(first: StageRunner, options: BuildOptions, routing: Routing) -> EnginePool | None:
    if not options.more_engines:
        return None
    if not options.registry.push_to:
        raise InputError(
            "a pool of engines shares stages through a registry stage cache: pass --cache-to REGISTRY/REPO "
            "(or set cache_registry and cache_push in the site configuration)"
        )
    # The engines find what the others built where those push it (--cache-from may name another cache).
    shared = options.registry.push_to
    first = dataclasses.replace(first, registry=RegistryCache(pull_from=shared, push_to=shared))
    more = [dataclasses.replace(first, engine=e, pulled=set(), pending=set()) for _, e in options.more_engines]
    return EnginePool([first, *more], routing)


def tag_finals(built: StagesBuilt, engine: Engine) -> Tagged:
    for stage, tag in built.plan.final_tags.items():
        engine.tag(built.image_ids[stage], tag)
    return Tagged(built, dict(built.plan.final_tags))


def smoke(
    tagged: Tagged, spec: Smoke, engine: Engine, cache: Cache, devices: tuple[str, ...], groups: tuple[int, ...] = ()
) -> SmokeResult:
    """Smoke the runtime image once per image key (a recorded pass is not run again)."""
    # A pass counts for this image and this smoke command: a new command or expectation runs again.
    key = digest({"image": tagged.built.plan.stages["runtime-image"].key, "smoke": spec.model_dump(mode="json")})
    if cache.records.read("smoke", key) is not None:
        return SmokeResult(True, True, "launch: passed (recorded for this image key)", "")
    outcome = run_smoke(engine, tagged.tags["runtime-image"], spec, devices, groups)
    if outcome.passed:
        cache.records.write({"output": outcome.output}, "smoke", key)
    return outcome
