"""Commands over a locked stack: render, plan, build, smoke."""

from __future__ import annotations

import json
import os
import shlex
import sys

from builder import lock as lock_io
from builder.cli.context import Context, say
from builder.cli.options import BuildArgs, EngineArgs, PlanArgs, RenderArgs, SmokeArgs, StageArgs
from builder.cli.screen import plan_lines, show, tag_lines
from builder.engine import BuildEngine, connect, launcher
from builder.execute import chain
from builder.execute.chain import BuildOptions, Request
from builder.execute.stage_registry import RegistryCache
from builder.manifest.model import Smoke
from builder.model.arch import Arch
from builder.model.errors import InputError, StackbuildError
from builder.plan.plan_model import Plan
from builder.plan.why import why
from builder.verify.diagnose import diagnose
from builder.verify.smoke import SmokeResult, run_smoke


def target_arch(arch: str | None) -> Arch:
    if arch:
        return Arch(arch)
    try:
        return Arch.host()
    except ValueError as err:
        raise InputError(f"this host's architecture is not one stackbuild builds for ({err}): pass --arch") from err


def _plan(ctx: Context, args: StageArgs) -> tuple[Request, Plan]:
    request = ctx.request(args.stack, target_arch(args.arch))
    return request, chain.plan(request, say)


def cmd_render(ctx: Context, args: RenderArgs) -> int:
    _, staged = _plan(ctx, args)
    if args.output is None:
        for stage in staged.order():
            print(f"### {stage.name}.Dockerfile\n{stage.dockerfile}")
            for path, text in stage.files:
                print(f"### {stage.name}/{path}\n{text}")
        return 0
    try:
        args.output.mkdir(parents=True, exist_ok=True)
        for stage in staged.order():
            (args.output / f"{stage.name}.Dockerfile").write_text(stage.dockerfile)
            for path, text in stage.files:
                (args.output / stage.name / path).parent.mkdir(parents=True, exist_ok=True)
                (args.output / stage.name / path).write_text(text)
    except OSError as err:
        raise InputError(f"-o {args.output}: cannot write there: {err.strerror or err}") from err
    print(f"{len(staged.stages)} Dockerfiles in {args.output} (build scripts in <stage>/steps/)")
    return 0


def cmd_plan(ctx: Context, args: PlanArgs) -> int:
    request, staged = _plan(ctx, args)
    work = chain.cached(staged, connect())
    cache = request.cache
    rows: list[dict[str, object]] = [
        {
            "stage": stage.name,
            "status": "build" if stage.name in work.to_build else "cached",
            "why": why(cache, staged, stage) if stage.name in work.to_build else "",
            "key": stage.key,
            "parents": list(stage.parents),
            "network": stage.network,
        }
        for stage in staged.order()
    ]
    if args.json:
        document = {"stack": staged.stack, "arch": args.arch, "stages": rows, "drift": list(staged.drift)}
        print(json.dumps(document | {"tags": dict(staged.final_tags)}, indent=2))
        return 0
    show(plan_lines(staged, rows))
    return 0


def _report_smoke(outcome: SmokeResult, image: str, command: str) -> int:
    say(f"[stackbuild] smoke: {outcome.summary}")
    if outcome.access.devices:
        line = launcher().launch_line(image, ["bash", "-c", command], access=outcome.access)
        say(f"[stackbuild] by hand: {shlex.join(line)}")
    if not outcome.passed and outcome.launched:
        say(outcome.output[-2000:])
        if cause := diagnose(outcome.output.splitlines()):
            say(f"[stackbuild] likely cause: {cause}")
        return 1
    return 0


def preflight(ctx: Context, stack: str, allow_unsupported: bool, frozen: bool, arch: Arch) -> bool:
    """What stops a build before the engine or the host is touched: for a stack with a lock, the parts
    it leaves unresolved for an architecture to build; for one without, a known-bad combination first,
    then everything its first lock still needs, all at once (a lock's combination was accepted when it
    was made). Whether the stack has a lock."""
    from builder.cli.locking import steps_needed
    from builder.cli.stacks import refuse_unsupported

    loaded, _ = ctx.load(stack)
    target = ctx.lock_path(loaded.name)
    if target.exists():
        chain.refuse_unresolved(lock_io.read(target), arch)
        return True
    if frozen:
        raise StackbuildError(
            f"{target}: no lock, and --frozen builds only from one: run `stackbuild lock {loaded.name}`"
        )
    refuse_unsupported(loaded, allow_unsupported)
    if steps := steps_needed(ctx, loaded):
        listed = "\n".join(f"  {n}. {step}" for n, step in enumerate(steps, start=1))
        raise StackbuildError(f"{loaded.name} cannot be built yet; still needed:\n{listed}")
    return False


def build_options(ctx: Context, args: EngineArgs) -> tuple[BuildEngine, BuildOptions]:
    """The engine to build on and the build's options, from the arguments and the site config."""
    site = ctx.site()
    registry = RegistryCache(
        pull_from=args.cache_from or site.cache_registry,
        push_to=args.cache_to or (site.cache_registry if site.cache_push else None),
    )
    if not os.environ.get("DOCKER_TLS_VERIFY") and any(url.startswith("tcp://") for url in args.engine):
        say(
            "[stackbuild] note: tcp:// engines without DOCKER_TLS_VERIFY=1 are spoken to unencrypted "
            "(registry logins too)"
        )
    first, more = (args.engine[0], args.engine[1:]) if args.engine else (None, [])
    options = BuildOptions(
        jobs=args.jobs,
        live=sys.stderr.isatty(),
        log_dir=ctx.log_dir(),
        registry=registry,
        more_engines=tuple((url, connect(url)) for url in more),
        engine_name=first or os.environ.get("DOCKER_HOST") or "the local engine",
    )
    return connect(first), options


def build_arch(
    ctx: Context, args: EngineArgs, arch: Arch, frozen: bool, allow_unsupported: bool = False
) -> chain.Built:
    """Build the stack for arch from its lock (made first when it has none, unless frozen), and tag the finals."""
    from builder.cli.stacks import run_compat

    loaded, path = ctx.load(args.stack)
    if not preflight(ctx, args.stack, allow_unsupported, frozen, arch):
        say(f"[stackbuild] {loaded.name} has no lock: locking it first (`stackbuild lock {loaded.name} --arch {arch}`)")
        run_compat(loaded, allow_unsupported)
    locked = chain.locked(loaded, ctx.lock_path(loaded.name), ctx.resolver(path), arch)
    request = Request(loaded, path, locked, ctx.site(), ctx.cache(), arch, frozen)
    engine, options = build_options(ctx, args)
    built = chain.build(request, engine, options, ctx.root / ".stackbuild" / "provenance", say)
    say(f"[stackbuild] provenance: {built.provenance}")
    facts = {tag: engine.inspect(tag) for tag in built.tagged.tags.values()}
    show(tag_lines((tag, about.id, about.size) for tag, about in facts.items()))
    return built


def run_smoke_of(built: chain.Built) -> int:
    outcome = chain.smoked(built)
    return _report_smoke(outcome, built.tagged.tags["runtime-image"], built.request.manifest.smoke.command)


def cmd_build(ctx: Context, args: BuildArgs) -> int:
    if args.preflight:
        preflight(ctx, args.stack, args.allow_unsupported, args.frozen, target_arch(args.arch))
        print(f"preflight: {args.stack} can be built here once the host is set up")
        return 0
    result = build_arch(ctx, args, target_arch(args.arch), args.frozen, args.allow_unsupported)
    return 0 if args.no_smoke else run_smoke_of(result)


def cmd_smoke(ctx: Context, args: SmokeArgs) -> int:
    engine = connect()
    smoke = ctx.load(args.stack)[0].smoke if args.stack else _carried_smoke(engine, args.image)
    outcome = run_smoke(engine, args.image, smoke)
    print(outcome.output.rstrip())
    return _report_smoke(outcome, args.image, smoke.command)


def _carried_smoke(engine: BuildEngine, image: str) -> Smoke:
    """The smoke command the image carries in its labels: no checkout needed."""
    from builder.handoff.contents import read_contents

    carried = read_contents(engine, image, Arch.host()).smoke()
    if carried is None:
        raise InputError(f"{image} carries no smoke command (built before images carried theirs): give --stack STACK")
    return carried
