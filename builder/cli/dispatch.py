"""Each command's function, imported when the command runs: importing every command family up front
costs seconds (the SBOM's schema validator alone), and every `stackbuild` call would pay them. Each
wrapper is a function object the parser dispatches to, so mypy checks the call."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from builder.cli.common import Context

Handler = Callable[["Context", argparse.Namespace], int]


def cmd_validate(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.stacks import cmd_validate

    return cmd_validate(ctx, args)


def cmd_schema(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.stacks import cmd_schema

    return cmd_schema(ctx, args)


def cmd_check(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.stacks import cmd_check

    return cmd_check(ctx, args)


def cmd_new(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.stacks import cmd_new

    return cmd_new(ctx, args)


def cmd_lock(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.locking import cmd_lock

    return cmd_lock(ctx, args)


def cmd_render(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.building import cmd_render

    return cmd_render(ctx, args)


def cmd_plan(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.building import cmd_plan

    return cmd_plan(ctx, args)


def cmd_build(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.building import cmd_build

    return cmd_build(ctx, args)


def cmd_verify_reproducible(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.verifying import cmd_verify_reproducible

    return cmd_verify_reproducible(ctx, args)


def cmd_smoke(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.building import cmd_smoke

    return cmd_smoke(ctx, args)


def cmd_publish(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.publishing import cmd_publish

    return cmd_publish(ctx, args)


def cmd_vendor(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.vendoring import cmd_vendor

    return cmd_vendor(ctx, args)


def cmd_import(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.vendoring import cmd_import

    return cmd_import(ctx, args)


def cmd_run(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.running import cmd_run

    return cmd_run(ctx, args)


def cmd_shell(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.running import cmd_shell

    return cmd_shell(ctx, args)


def cmd_inspect(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.handing import cmd_inspect

    return cmd_inspect(ctx, args)


def cmd_diff(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.handing import cmd_diff

    return cmd_diff(ctx, args)


def cmd_sbom(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.handing import cmd_sbom

    return cmd_sbom(ctx, args)


def cmd_doctor(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.doctoring import cmd_doctor

    return cmd_doctor(ctx, args)


def cmd_gc(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.tidying import cmd_gc

    return cmd_gc(ctx, args)
