"""A stage's image through the registry cache: pulled instead of built (probed before it is tagged),
and pushed once its probes passed and it was tagged."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from builder.engine import Engine, EngineError
from builder.execute.stage_checks import drop, probe
from builder.execute.stage_log import StageFailed, StageLog, StageSkipped, StateReport, line_writer
from builder.inputs.site import SiteConfig
from builder.model.arch import Arch
from builder.plan.plan_model import Plan, Stage
from builder.store.cache import Cache


@dataclass(frozen=True)
class RegistryCache:
    """Where stage images are looked up before building (pull_from) and sent after their probes pass
    (push_to): REGISTRY/REPO, each stage as REGISTRY/REPO/<stage>:<key>. Separate, as CI pushes and
    laptops pull."""

    pull_from: str | None = None
    push_to: str | None = None

    @classmethod
    def of(cls, site: SiteConfig, cache_from: str | None, cache_to: str | None) -> RegistryCache:
        """The one rule for a build's: --cache-from, else the site's cache_registry; --cache-to, else
        the site's when it says cache_push."""
        return cls(
            pull_from=cache_from or site.cache_registry,
            push_to=cache_to or (site.cache_registry if site.cache_push else None),
        )

    @staticmethod
    def ref(where: str, stage: Stage) -> str:
        return f"{where}/{stage.name}:{stage.key}"


# The registry cache's answer for a stage: the image id pulled, None when it is not there, or why it
# could not be asked.
Answer = str | None | EngineError
PULLS_AT_ONCE = 4  # the engine downloads a few layers at a time (Docker: 3) whatever is asked of it


def asked_at_once(engine: Engine, where: str, stages: Sequence[Stage], arch: Arch) -> dict[str, Answer]:
    """Each stage's answer from the registry cache at where, every stage pulled at once rather than
    each after its parents: the engine fetches their layers side by side, each layer once (one it has,
    or one another of these pulls brings, is not downloaded again)."""

    def ask(stage: Stage) -> Answer:
        try:
            return engine.pull(RegistryCache.ref(where, stage), arch)
        except EngineError as err:
            return err

    with concurrent.futures.ThreadPoolExecutor(max(1, min(PULLS_AT_ONCE, len(stages)))) as pool:
        return dict(zip((s.name for s in stages), pool.map(ask, stages), strict=True))


@dataclass(frozen=True)
class Pulling:
    """Where a pull goes and what it answers to; the answers already asked (asked_at_once)."""

    engine: Engine
    cache: Cache
    plan: Plan
    registry: RegistryCache
    answers: Mapping[str, Answer] = field(default_factory=dict)


def pulled(
    at: Pulling, stage: Stage, report: StateReport, log_file: Path, log_mode: str, parents_tagged: Callable[[], bool]
) -> str | None:
    """The stage from the registry cache, probed before it is tagged: an image that fails its probes
    (a bad push) is dropped and the stage built here instead. None when it is not there."""
    if not at.registry.pull_from:
        return None
    ref = RegistryCache.ref(at.registry.pull_from, stage)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open(log_mode) as file:
        log = StageLog(stage.name, log_file, line_writer(file))
        report("pulling")
        try:
            if isinstance(answer := at.answers.get(stage.name), EngineError):
                raise answer
            image_id = answer if stage.name in at.answers else at.engine.pull(ref, at.plan.arch)
        except EngineError as err:  # the cache is an optimisation: an unreachable registry means building
            log.write(f"# registry cache: {err}; building instead")
            return None
        if image_id is None:
            log.write(f"# registry cache: {ref} is not there; building")
            return None
        log.write(f"# pulled {ref} ({image_id})")
        report("probing")
        try:
            probe(at.engine, at.cache, at.plan, stage, image_id, log)
        except StageFailed as err:  # the image is gone with its registry name
            log.write(f"# the pulled image fails its probes ({err.reason}): building instead")
            return None
        if not parents_tagged():  # tagged only after its parents, as if built
            log.write("# a parent failed its probes: the pulled image is dropped")
            drop(at.engine, stage, image_id)
            raise StageSkipped(f"{stage.name}: a parent failed")
    at.engine.tag(image_id, stage.tag())
    at.engine.remove(ref)  # only the registry name: the image stays under the stage's tag
    return image_id


def pushed(
    engine: Engine, registry: RegistryCache, stage: Stage, image_id: str, report: StateReport, log_file: Path
) -> None:
    """After its probes passed and it was tagged here: the stage to the registry cache (a registry
    tag appears only once every layer is there)."""
    if not registry.push_to:
        return
    ref = RegistryCache.ref(registry.push_to, stage)
    report("pushing")
    try:
        digest_pushed = engine.push(image_id, ref)
    except EngineError as err:
        raise StageFailed(stage.name, f"cannot push to the registry cache: {err}", log_file=log_file) from err
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("a") as log:
        log.write(f"# pushed {ref} ({digest_pushed})\n")
