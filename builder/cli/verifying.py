"""`stackbuild verify-reproducible STACK`: two builds from nothing, compared stage by stage."""

from __future__ import annotations

import dataclasses
import time

from builder import lock as lock_io
from builder.cli.arguments import target_arch
from builder.cli.context import Context, say
from builder.cli.screen import network_note
from builder.cli.stack_commands import VerifyArgs
from builder.engine import BuildEngine
from builder.execute import chain
from builder.execute.chain import Request
from builder.execute.reproduce import (
    Conditions,
    Elsewhere,
    Verdict,
    compare,
    elsewhere,
    first_build,
    forget,
    second_build,
)
from builder.manifest import load
from builder.model.errors import InputError
from builder.plan.plan_model import Plan


def cmd_verify_reproducible(ctx: Context, args: VerifyArgs) -> int:
    request = ctx.request(args.stack, target_arch(args.arch))
    with elsewhere(request.manifest_path, ctx.lock_path(request.manifest.name), args.at) as there:
        if not there.lock.is_file():
            raise InputError(
                f"--at {args.at}: that commit has no {there.lock.name}: give a commit whose lock is the same"
            )
        second_request = dataclasses.replace(
            request, manifest=load(there.manifest), manifest_path=there.manifest, lock=lock_io.read(there.lock)
        )
        if second_request.lock.lock_sha256 != request.lock.lock_sha256:
            raise InputError(
                f"--at {args.at}: {there.lock.name} there is another lock than the checkout's "
                f"({second_request.lock.lock_sha256[:12]} vs {request.lock.lock_sha256[:12]}): "
                "give a commit whose lock is the same"
            )
        first_engine = ctx.engine()
        second_engine: BuildEngine = ctx.engine(args.second_engine) if args.second_engine else first_engine
        plan = chain.prepared(request, say)[1]
        for stage in plan.order():
            if stage.network:
                say(f"[stackbuild] {network_note(stage.name)}")
        try:
            verdicts, pushed, took = _both(ctx, args, plan, there, second_request, first_engine, second_engine)
        finally:  # the runs' tags, whatever happened, and with them their images (unless a stage tag names one)
            forget(first_engine, plan, "first")
            forget(second_engine, plan, "second")
    _report(verdicts, pushed, *took)
    return 0 if all(v.same for v in verdicts) and all(a == b for _, a, b in pushed) else 1


def _both(
    ctx: Context,
    args: VerifyArgs,
    plan: Plan,
    there: Elsewhere,
    second_request: Request,
    first_engine: BuildEngine,
    second_engine: BuildEngine,
) -> tuple[list[Verdict], list[tuple[str, str, str]], tuple[float, float]]:
    """The two builds from nothing, compared (and pushed when asked)."""
    started = time.monotonic()
    first = first_build(plan, first_engine, second_request.cache, ctx.log_dir(), say)
    took_first = time.monotonic() - started
    conditions = Conditions()
    say(f"[stackbuild] second build from nothing: {there.how}, every file touched, in a process with {conditions}")
    started = time.monotonic()
    engine_at = (args.second_engine, ctx.settings.builder, ctx.settings.credentials)
    second = second_build(second_request, plan, engine_at, ctx.log_dir(), say, conditions)
    took_second = time.monotonic() - started
    verdicts = compare(plan, (first_engine, first), (second_engine, second))
    pushed = _push(plan, args.registry, (first_engine, first), (second_engine, second)) if args.registry else []
    return verdicts, pushed, (took_first, took_second)


def _push(
    plan: Plan, registry: str, first: tuple[BuildEngine, dict[str, str]], second: tuple[BuildEngine, dict[str, str]]
) -> list[tuple[str, str, str]]:
    """Each stage of both builds pushed; (stage, first digest, second digest)."""
    pushed = []
    for name in plan.stages:
        where = f"{registry}/{plan.stack.lower()}-verify:{name}"
        a = first[0].push(first[1][name], f"{where}-first")
        b = second[0].push(second[1][name], f"{where}-second")
        pushed.append((name, a, b))
    return pushed


def _report(verdicts: list[Verdict], pushed: list[tuple[str, str, str]], first: float, second: float) -> None:
    width = max(len(v.stage) for v in verdicts)
    for verdict in verdicts:
        if verdict.same:
            print(f"same     {verdict.stage:<{width}}  {verdict.first}")
            continue
        print(f"differs  {verdict.stage:<{width}}  {verdict.first} -> {verdict.second}")
        for line in verdict.differences:
            print(f"           {line}")
    for name, a, b in pushed:
        print(
            f"{'same' if a == b else 'differs':<8} {name:<{width}}  registry digest {a}{'' if a == b else f' -> {b}'}"
        )
    same = sum(v.same for v in verdicts)
    say(
        f"[stackbuild] {same} of {len(verdicts)} stages give the same image both times "
        f"(first build {first:.0f}s, second {second:.0f}s)"
        + (f"; registry digests the same for {sum(a == b for _, a, b in pushed)} of {len(pushed)}" if pushed else "")
    )
