"""Commands over a locked stack: render, plan, build, smoke."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from builder import lock as lock_io
from builder.cli.arguments import target_arch
from builder.cli.context import Context, say
from builder.cli.engines import build_options, named_engines
from builder.cli.readiness import refuse_unsupported, run_compat, steps_needed
from builder.cli.screen import compile_cache_lines, final_lines, plan_lines, show
from builder.cli.stack_commands import BuildArgs, PlanArgs, RenderArgs, SmokeArgs
from builder.engine import BuildEngine
from builder.execute import chain
from builder.execute.chain import Request
from builder.manifest.model import Smoke
from builder.model.arch import Arch
from builder.model.errors import InputError, StackbuildError
from builder.plan.plan_model import Plan
from builder.plan.why import why
from builder.verify.host import npu_group
from builder.verify.smoke import SmokeResult, npu_devices, run_smoke, smoke_log, smoke_report


def _plan(ctx: Context, args: RenderArgs | PlanArgs) -> tuple[Request, Plan]:
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
    engines = named_engines(ctx, args.engine)
    engine = engines[0][1]
    routing = chain.routing(staged, engines)
    work = chain.cached(staged, engine)
    caches = {state.component: state for state in chain.compile_caches(staged, engine)}
    cache = request.cache
    rows: list[dict[str, object]] = [
        {
            "stage": stage.name,
            "status": "build" if stage.name in work.to_build else "cached",
            "why": why(cache, staged, stage) if stage.name in work.to_build else "",
            "key": stage.key,
            "parents": list(stage.parents),
            "network": stage.network,
            **({"compile_cache": dataclasses.asdict(caches[stage.name])} if stage.name in caches else {}),
        }
        for stage in staged.order()
    ]
    if args.json:
        document = {"stack": staged.stack, "arch": args.arch, "stages": rows, "drift": list(staged.drift)}
        print(json.dumps(document | {"tags": dict(staged.final_tags), "routing": routing.as_json()}, indent=2))
        return 0
    show([*plan_lines(staged, rows), *compile_cache_lines(list(caches.values())), routing.line()])
    return 0


def _report_smoke(outcome: SmokeResult, image: str, command: str, log: Path) -> int:
    for line in smoke_report(outcome, image, command, log):
        say(line)
    return 1 if outcome.failed else 0


def preflight(ctx: Context, stack: str, allow_unsupported: bool, frozen: bool, arch: Arch) -> bool:
    """What stops a build before the engine or the host is touched: for a stack with a lock, the parts
    it leaves unresolved for an architecture to build; for one without, a known-bad combination first,
    then everything its first lock still needs, all at once (a lock's combination was accepted when it
    was made). Whether the stack has a lock."""
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


def cmd_build(ctx: Context, args: BuildArgs) -> int:
    """The stack built for one architecture from its lock (made first when it has none, unless --frozen),
    its finals tagged and shown, then smoked."""
    arch = target_arch(args.arch)
    if args.preflight:
        preflight(ctx, args.stack, args.allow_unsupported, args.frozen, arch)
        print(f"preflight: {args.stack} can be built here once the host is set up")
        return 0
    loaded, path = ctx.load(args.stack)
    if not preflight(ctx, args.stack, args.allow_unsupported, args.frozen, arch):
        say(f"[stackbuild] {loaded.name} has no lock: locking it first (`stackbuild lock {loaded.name} --arch {arch}`)")
        run_compat(loaded, args.allow_unsupported)
    locked = chain.locked(loaded, ctx.lock_path(loaded.name), ctx.resolver(path), arch)
    request = Request(loaded, path, locked, ctx.site(), ctx.cache(), arch, args.frozen, ctx.settings.image_prefix)
    engine, options = build_options(ctx, args)
    built = chain.build(request, engine, options, ctx.root / ".stackbuild" / "provenance", say)
    show(final_lines(engine, built))
    if args.no_smoke:
        return 0
    outcome = chain.smoked(built, options.devices, options.device_groups)
    log = smoke_log(options.log_dir, loaded.name, str(built.request.arch))
    return _report_smoke(outcome, built.tagged.tags["runtime-image"], loaded.smoke.command, log)


def cmd_smoke(ctx: Context, args: SmokeArgs) -> int:
    engine = ctx.engine()
    smoke = ctx.load(args.stack)[0].smoke if args.stack else _carried_smoke(engine, args.image)
    root = ctx.settings.host_root
    outcome = run_smoke(engine, args.image, smoke, npu_devices(root), npu_group(root))
    print(outcome.output.rstrip())
    return _report_smoke(outcome, args.image, smoke.command, ctx.error_log_dir() / "smoke.log")


def _carried_smoke(engine: BuildEngine, image: str) -> Smoke:
    """The smoke command the image carries in its labels: no checkout needed."""
    from builder.handoff.contents import read_contents

    carried = read_contents(engine, image, Arch.host()).smoke()
    if carried is None:
        raise InputError(f"{image} carries no smoke command (built before images carried theirs): give --stack STACK")
    return carried
