"""The build chain, written out once: the stack's lock read (or made first), the locked request's
inputs prepared, resolved and planned, what is cached found, the rest executed, the finals tagged,
the run recorded with its provenance; smoked when the caller asks; and publish's: every architecture
built and smoked, then pushed. The CLI, verify-reproducible, vendor, bench and the tests call these
functions and never its steps (an import contract holds the CLI to it), so no caller writes the chain
again.

Each step's result is the next one's argument and the caller's return value; nothing is handed back
up through a display or a shared object."""

from __future__ import annotations

import dataclasses
import datetime
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from builder.engine import BuildEngine, Engine
from builder.execute import compile_mounts
from builder.execute.compile_mounts import CacheState
from builder.execute.history import record_run
from builder.execute.pipeline import BuildOptions, Tagged, Work, execute, find_cached, smoke, tag_finals
from builder.execute.provenance import provenance, write_provenance
from builder.execute.routing import Routing, route
from builder.inputs.project import origin_of
from builder.lock import io as lock_io
from builder.lock.locked import Lock
from builder.lock.make_lock import make_lock
from builder.lock.resolver import Resolver
from builder.manifest.model import Manifest
from builder.model.arch import Arch
from builder.model.errors import StackbuildError
from builder.model.say import Say
from builder.model.settings import RegistryCredentials, login_for
from builder.plan.labels import release_name
from builder.plan.make import make_plan
from builder.plan.plan_model import Plan
from builder.plan.prepare import Inputs, Request, prepare_inputs, refuse_unresolved, resolve_inputs
from builder.verify.smoke import SmokeResult, smoke_log, smoke_report

if TYPE_CHECKING:  # publishing's modules are imported when a publish runs: the provenance's protobufs cost
    # every plan, render and build a quarter of a second
    from builder.engine.registry_api import RegistryClient
    from builder.execute.publish import Pushed, SbomOf

__all__ = [
    "BuildOptions",
    "Built",
    "Destination",
    "Published",
    "Request",
    "build",
    "cached",
    "destination",
    "locked",
    "plan",
    "prepared",
    "published",
    "refuse_unresolved",
    "routing",
    "smoked",
]


def locked(manifest: Manifest, target: Path, resolver: Resolver, arch: Arch) -> Lock:
    """The stack's lock: read from target, or (a stack without one) made for arch and written there."""
    if target.exists():
        return lock_io.read(target)
    made = make_lock(manifest, resolver, [arch], target)
    resolver.say(f"[stackbuild] wrote {target}")
    return made


def plan(request: Request, say: Say) -> Plan:
    """The plan of a locked request with nothing fetched or bootstrapped (render, plan, shell)."""
    return make_plan(resolve_inputs(request, say=say))


def prepared(request: Request, say: Say) -> tuple[Inputs, Plan]:
    """The plan with every input in the cache first (bases bootstrapped, .debs and wheels fetched):
    what a build, a vendor bundle or a second build of verify-reproducible needs."""
    inputs = resolve_inputs(request, say=say, prepared=prepare_inputs(request, say))
    return inputs, make_plan(inputs)


def cached(planned: Plan, engine: Engine) -> Work:
    """Which stages the engine has (by key) and which are to build."""
    return find_cached(planned, engine)


def routing(planned: Plan, engines: Sequence[tuple[str, Engine]]) -> Routing:
    """Which of the engines (name, engine; the first the one the build reports to) would build the plan's
    stages: those of its architecture, else all of them under emulation."""
    return route(planned.arch, engines)


def compile_caches(planned: Plan, engine: BuildEngine) -> list[CacheState]:
    """Each component's compile cache: whether its build uses one, and what the engine keeps of it."""
    return compile_mounts.states(planned, engine)


@dataclass(frozen=True)
class Built:
    """One architecture built and tagged: what the caller prints, smokes or publishes."""

    request: Request
    tagged: Tagged
    engine: BuildEngine
    seconds: float
    provenance: Path  # the local provenance record of this build


def build(request: Request, engine: BuildEngine, options: BuildOptions, provenance_dir: Path, say: Say) -> Built:
    """The chain for one architecture of a locked request: prepare, plan, find what is cached,
    execute the rest, tag the finals, record the run and its provenance."""
    started = time.monotonic()
    inputs, planned = prepared(request, say)
    record_run(planned, request)
    done = execute(find_cached(planned, engine), engine, request.cache, options, say)
    tagged = tag_finals(done, engine)
    took = time.monotonic() - started
    pulled = f", {len(done.pulled)} pulled" if done.pulled else ""
    say(f"[stackbuild] {len(done.built)} built{pulled}, {len(done.cached)} cached in {took:.2f}s")
    record = provenance(tagged, request.lock, options.engine_name, took, inputs.origin)
    written = write_provenance(provenance_dir, record)
    say(f"[stackbuild] provenance: {written}")
    return Built(request, tagged, engine, took, written)


def smoked(built: Built, devices: tuple[str, ...], groups: tuple[int, ...] = ()) -> SmokeResult:
    """The stack's smoke command in the runtime image just built, given the host's NPU devices (a recorded
    pass is not run again)."""
    return smoke(built.tagged, built.request.manifest.smoke, built.engine, built.request.cache, devices, groups)


@dataclass(frozen=True)
class Destination:
    """Where a publish goes, asked before anything is built: the stack's requests, one per architecture,
    all from its lock (frozen), and the registry that answered for its repository."""

    requests: tuple[Request, ...]
    target: str  # REGISTRY/NAMESPACE
    aliases: tuple[str, ...]
    client: RegistryClient


def destination(
    requests: Sequence[Request], target: str, aliases: Sequence[str], credentials: RegistryCredentials | None = None
) -> Destination:
    """Publish's checks before an engine is touched: every architecture's lock complete, and the registry
    asked (a refused login or an unreachable registry fails now, not after the builds). credentials: the
    settings' registry login (None: Docker's config's)."""
    from builder.engine.registry_api import RegistryClient
    from builder.execute.publish import immutable_tag

    frozen = tuple(dataclasses.replace(request, frozen=True) for request in requests)  # only what the lock pins
    for request in frozen:
        refuse_unresolved(request.lock, request.arch)
    registry, _, namespace = target.partition("/")
    client = RegistryClient(registry, login_for(credentials, registry))
    client.manifest(f"{namespace}/{frozen[0].lock.stack.lower()}", immutable_tag(frozen[0].lock))
    return Destination(frozen, target, tuple(aliases), client)


@dataclass(frozen=True)
class Published:
    built: dict[Arch, Built]
    pushed: list[Pushed]


def published(
    to: Destination, engine: BuildEngine, options: BuildOptions, provenance_dir: Path, say: Say, sbom_of: SbomOf
) -> Published:
    """Publish's chain: each architecture built and smoked; only when every smoke passed, the images
    pushed, each with the build's provenance and its SBOM (sbom_of makes it), and one image index put per tag."""
    from builder.execute.publish import BuildRecord, publish

    started = datetime.datetime.now(datetime.timezone.utc)
    built: dict[Arch, Built] = {}
    for request in to.requests:
        name = request.manifest.name
        say(f"[stackbuild] publish: building {name} for {request.arch} from its lock (frozen)")
        done = built[request.arch] = build(request, engine, options, provenance_dir, say)
        outcome = smoked(done, options.devices, options.device_groups)
        log = smoke_log(options.log_dir, name, str(request.arch))
        for line in smoke_report(outcome, done.tagged.tags["runtime-image"], request.manifest.smoke.command, log):
            say(line)
        if outcome.failed:  # only what passed its smoke is pushed
            raise StackbuildError(f"the smoke of {name} failed on {request.arch}: nothing was pushed")
    last = to.requests[-1]
    say(f"[stackbuild] publish: pushing to {to.target}")
    images = {arch: done.tagged.tags for arch, done in built.items()}
    record = BuildRecord(origin_of(last.manifest_dir), started)
    release = release_name(last.manifest)
    pushed = publish(images, last.lock, release, to.target, to.aliases, engine, to.client, record, sbom_of)
    return Published(built, pushed)
