"""The stackbuild command line: a thin layer over the core, one module per command family. Every
command is declared once, in stack_commands or image_commands (builder.cli.declare says how); the
parser, the typed options each command gets, docs/cli.md and noxfile.py's view of the options are made
from those declarations.

This is the one error boundary: bad input exits 2 with one line, a failure exits 1 with one
line, and anything unexpected exits 1 naming a log that holds the traceback (--debug shows it).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import functools
import gc
import os
import signal
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from builder import __version__
from builder.cli import image_commands, stack_commands
from builder.cli.configuration import resolve
from builder.cli.context import Context, project_root
from builder.cli.declare import Command, add_command, task_listing
from builder.model.errors import InputError, LoggedFailure, ManifestError, StackbuildError, Unreached
from builder.model.registry import registry_of
from builder.store.scratch import remove_live_scratch

EPILOG = """\
`stackbuild COMMAND --help` says all a command does and takes. A manifest
(stacks/<name>.yaml) is what a team reviews; `lock` resolves it into lockfiles/<name>.lock.json
(git commits, tree hashes, installer sha256, base tarballs), which is all a build reads.
Run from anywhere in a project: the nearest directory from here up holding stacks/.
Exit codes: 0 done; 1 a failure (one line naming its log); 2 bad input (a stack, path,
lockfile or option value; one line, no log); 3 a source did not answer (lock, build, publish,
lock --check); 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
"""


# Every command, in the order `stackbuild --help` lists them.
COMMANDS: tuple[Command, ...] = (*stack_commands.DECLARED.commands, *image_commands.DECLARED.commands)


@functools.cache  # built once per process: the tests call main() thousands of times
def build_parser() -> argparse.ArgumentParser:
    return make_parser(COMMANDS)


def make_parser(commands: Sequence[Command]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stackbuild",
        usage="stackbuild [-h] [--version] [--root ROOT] [--site-config FILE] [--debug] COMMAND ...",
        description="Reproducible container builds of the Ascend NPU software stack.",
        epilog=f"{task_listing(commands)}\n\n{EPILOG}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"stackbuild {__version__}")
    parser.add_argument(
        "--root",
        type=Path,
        help="project root holding stacks/ (default: the nearest directory from here up that holds one)",
    )
    parser.add_argument(
        "--site-config",
        type=Path,
        metavar="FILE",
        help="site configuration (default: the first of $STACKBUILD_SITE_CONFIG, ./stackbuild.site.yaml, "
        "~/.config/stackbuild/site.yaml)",
    )
    parser.add_argument("--debug", action="store_true", help="print the traceback of an unexpected error")
    # The flat list argparse would print is replaced by the commands grouped by task (the epilog).
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", help=argparse.SUPPRESS, prog="stackbuild"
    )
    for command in commands:
        add_command(sub, command)
    return parser


def _run(ctx: Context, args: argparse.Namespace) -> int:
    paused = not gc.isenabled()  # by the entry point (builder.__main__), for start-up
    command: Command = args.declared
    if paused:  # everything imported so far stays: the collector need not look at it again
        gc.freeze()
        gc.enable()
    if (login := ctx.settings.credentials) and login.host is None:  # bound to the registry this command names
        login = dataclasses.replace(login, host=_named_registry(ctx, args))
        ctx = dataclasses.replace(ctx, settings=dataclasses.replace(ctx.settings, credentials=login))
    if not command.uses_cache:
        return command.run(ctx, args)
    from builder.execute.history import running_build  # only commands that use the cache pay for it

    cache = ctx.cache()
    with running_build(cache):  # gc refuses to run meanwhile
        cache.scratch.sweep()  # what a killed command left in tmp/ (a kill -9 unwinds nothing)
        return command.run(ctx, args)


NO_REGISTRY = "-"  # names no registry: the environment's credentials go nowhere


def _named_registry(ctx: Context, args: argparse.Namespace) -> str:
    """The registry the environment's credentials go to when it does not name one: the one this command
    names (--registry, --cache-to/--cache-from, else the site's cache_registry)."""
    from builder.execute.stage_registry import RegistryCache  # only when the environment has credentials

    named = [getattr(args, option, None) for option in ("registry", "cache_to", "cache_from")]
    # The site's stage cache when the command uses it unasked: a build's (RegistryCache.of, the one
    # rule of its defaults) and the one doctor checks.
    site = ctx.site()
    if "cache_from" in args:
        stage_cache = RegistryCache.of(site, args.cache_from, args.cache_to)
        named += [stage_cache.pull_from, stage_cache.push_to]
    if not any(named):
        named.append(site.cache_registry)
    hosts = sorted({registry_of(value) for value in named if value})  # as the engine names them
    if len(hosts) > 1:
        raise InputError(
            f"STACKBUILD_REGISTRY_USERNAME/PASSWORD would go to {' and '.join(hosts)}: set STACKBUILD_REGISTRY_HOST "
            "to the one they are for"
        )
    return hosts[0] if hosts else NO_REGISTRY


def _where_the_traceback_is(ctx: Context) -> str:
    """The current exception's traceback written to a log; how the user finds it."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S")
    try:  # outside a project the cache's logs, which need a home directory
        path = ctx.error_log_dir() / f"error-{stamp}-{os.getpid()}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(traceback.format_exc())
    except (OSError, RuntimeError, InputError):
        return "rerun with --debug for the traceback"
    return f"traceback in {path}"


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread: it unwinds as Ctrl-C does (temporary directories removed)."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends it at once
    raise Terminated


def terminate_on_sigterm() -> None:
    """SIGTERM raises Terminated: for the command's own process (builder.__main__), not a caller of main()."""
    signal.signal(signal.SIGTERM, _terminate)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    root = args.root.resolve() if args.root else project_root(Path.cwd().resolve())
    try:  # stackbuild's settings, resolved here once and passed down
        ctx = Context(root=root, debug=args.debug, settings=resolve(os.environ, root, args.site_config))
    except InputError as err:
        print(f"stackbuild: error: {err}", file=sys.stderr)
        return err.exit_code
    try:
        if args.declared.takes_default_stack and args.stack is None:
            args.stack = ctx.default_stack()
        code = _run(ctx, args)
    except (ManifestError, InputError, LoggedFailure, Unreached) as err:  # a manifest's problems say where
        print(err if isinstance(err, ManifestError) else f"stackbuild: error: {err}", file=sys.stderr)
        return err.exit_code
    except StackbuildError as err:  # a failure: one line, and where its traceback is
        if ctx.debug:
            traceback.print_exc()
        print(f"stackbuild: error: {err} ({_where_the_traceback_is(ctx)})", file=sys.stderr)
        return err.exit_code
    except BrokenPipeError:  # the reader went away (`stackbuild render | head`): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush is quiet too
        return 141  # as a shell reports a command SIGPIPE ended
    except KeyboardInterrupt as err:
        # Stage images are tagged only after their probes pass, so stopping here leaves nothing
        # that looks built; exit at once instead of waiting for builds still in flight (their
        # temporary directories go first: this thread's are unwound already, theirs are not).
        remove_live_scratch()
        how, code = ("terminated", 143) if isinstance(err, Terminated) else ("interrupted", 130)
        print(f"stackbuild: {how}; nothing unfinished is tagged, run the command again to go on", file=sys.stderr)
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(code)
    except Exception as err:  # the boundary: anything else is a bug, reported in one line plus a log
        if ctx.debug:
            traceback.print_exc()
            return 1
        print(
            f"stackbuild: internal error: {type(err).__name__}: {err} ({_where_the_traceback_is(ctx)})", file=sys.stderr
        )
        return 1
    return code
