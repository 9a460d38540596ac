"""`stackbuild run TAG [-- CMD]`: the image started with what this host can give it (its NPUs and
driver, found as CANN's own `docker run` names them) by the engine's client, or the line that starts
it (`docker run ...`) with --print.
`stackbuild shell STACK STAGE [-- CMD]`: the same for a stage's image, or a failed stage's last state."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from builder.cli.arguments import target_arch
from builder.cli.context import Context, say
from builder.cli.image_commands import ContainerArgs, RunArgs
from builder.cli.stack_commands import DevcontainerArgs, ShellArgs
from builder.engine import Attach, DeviceAccess, EngineError, launcher
from builder.execute import chain
from builder.execute.debug import last_failure, rerun_line
from builder.execute.shell_state import make_failed_state
from builder.handoff import devcontainer, kubernetes
from builder.handoff.contents import read_contents
from builder.model.arch import Arch
from builder.model.errors import InputError, StackbuildError
from builder.verify.cdi import CDI_DOCKER, cdi_access, npu_devices
from builder.verify.host import ASCEND_RUNTIME, HostAccess, host_access, npu_group, runtime_access


def _access(ctx: Context, devices: list[int]) -> HostAccess:
    """The NPUs a container gets: through the Ascend Docker Runtime where the engine has it (the caller's
    ASCEND_VISIBLE_DEVICES, else the picked ones, else all), else as device nodes and driver paths."""
    if ASCEND_RUNTIME in _runtimes(ctx):
        access = runtime_access(ctx.settings.host_root, devices, ctx.settings.visible_devices)
    else:
        access = host_access(ctx.settings.host_root, devices)
    for note in access.notes:
        say(f"[stackbuild] note: {note}")
    if specs := sorted({d.spec for d in npu_devices(ctx.settings.host_root)}):
        say(f"[stackbuild] note: a CDI spec names this host's NPUs ({', '.join(specs)}): `stackbuild run --print "
            f"--format cdi` gives the line for {CDI_DOCKER}")  # fmt: skip
    return access


def _runtimes(ctx: Context) -> tuple[str, ...]:
    """The engine's container runtimes; none when it does not answer (the line is still printed)."""
    try:
        return ctx.engine().about().runtimes
    except EngineError:
        return ()


def _command(args: ContainerArgs) -> list[str]:
    given = args.command
    return given[1:] if given[:1] == ["--"] else given


def _start(image: str, command: list[str], access: DeviceAccess, only_print: bool, network: bool = True) -> int:
    """The engine's client started on image (this process replaced), or its line printed."""
    engine = launcher()
    # A terminal both ways: the container gets one. Otherwise it gets this standard input (commands piped
    # in run). What is printed is what would start here.
    attach: Attach = "terminal" if sys.stdin.isatty() and sys.stdout.isatty() else "stdin"
    line = engine.launch_line(image, command, access=access, network=network, attach=attach)
    if only_print:
        print(shlex.join(line))
        return 0
    engine.launch(line)


def cmd_run(ctx: Context, args: RunArgs) -> int:
    if args.format == "k8s":
        if not args.print:
            raise InputError("--format k8s writes manifests for a cluster: give --print with it")
        contents = read_contents(ctx.engine(), args.image, Arch.host())
        groups = npu_group(ctx.settings.host_root)
        print(kubernetes.manifests(contents, _command(args), len(args.device) or 1, groups), end="")
        return 0
    if args.format == "cdi":  # this engine cannot run it (Docker 20.10): printed for one that can
        if not args.print:
            raise InputError(f"--format cdi is a line for {CDI_DOCKER}: give --print with it")
        say(f"[stackbuild] note: this line needs {CDI_DOCKER}")
        return _start(args.image, _command(args), cdi_access(ctx.settings.host_root, args.device), only_print=True)
    return _start(args.image, _command(args), _access(ctx, args.device).access, args.print)


def cmd_shell(ctx: Context, args: ShellArgs) -> int:

    request = ctx.request(args.stack, target_arch(args.arch))
    plan = chain.plan(request, say)  # to name the stage: nothing fetched
    stage = plan.stages.get(args.stage)
    if stage is None:
        raise InputError(f"{args.stage!r} is not a stage of {plan.stack} (stages: {', '.join(plan.stages)})")
    engine = ctx.engine()
    image = stage.tag()
    failed_state = stage.failed_tag()
    if engine.image_id(image):
        say(f"[stackbuild] {stage.name}: its image, built and probed ({image})")
    else:
        failure = last_failure(request.cache, plan, stage)
        if failure is None:
            raise StackbuildError(
                f"stage {stage.name} of {plan.stack} is not built and did not fail with its current inputs: "
                f"run `stackbuild build {args.stack}` (a stage that fails can then be opened here)"
            )
        say(f"[stackbuild] {stage.name} failed: {failure.reason}")
        image = failed_state
        if not engine.image_id(failed_state):
            make_failed_state(request, engine, stage.name, failure, failed_state, log_dir=ctx.log_dir(), say=say)
        if failure.command:
            say(f"[stackbuild] the step that failed, to run again here: {rerun_line(failure.command)}")
        else:
            say("[stackbuild] the image its probes rejected: the build log names the probe that failed")
    command = _command(args) or ["/bin/bash"]
    # As the stage was built: no network unless it declares it.
    return _start(image, command, _access(ctx, args.device).access, args.print, network=stage.network)


def cmd_devcontainer(ctx: Context, args: DevcontainerArgs) -> int:
    request = ctx.request(args.stack, target_arch(args.arch))
    plan = chain.plan(request, say)
    image = plan.final_tags["devel-image"]
    target = (args.output or Path.cwd()) / ".devcontainer" / "devcontainer.json"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        access = _access(ctx, args.device).access
        target.write_text(devcontainer.text(f"{plan.stack} devel", image, access, request.manifest.run_user))
    except OSError as err:
        raise InputError(f"-o {target.parent.parent}: cannot write there: {err.strerror or err}") from err
    say(f"[stackbuild] {target}: {image} (build it first: `stackbuild build {args.stack}`)")
    return 0
