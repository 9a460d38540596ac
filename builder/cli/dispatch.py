"""Each command's function, imported when the command runs: importing every command family up front
costs seconds (the SBOM's schema validator alone), and every `stackbuild` call would pay them. Each
wrapper is a function object the parser dispatches to, so mypy checks the call, and hands the command
its options as their frozen value (builder.cli.options)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from builder.cli.options import (
    BuildArgs,
    CheckArgs,
    DiffArgs,
    DoctorArgs,
    GcArgs,
    ImportArgs,
    InspectArgs,
    LockArgs,
    NewArgs,
    PlanArgs,
    PublishArgs,
    RenderArgs,
    RunArgs,
    SbomArgs,
    SchemaArgs,
    ShellArgs,
    SmokeArgs,
    ValidateArgs,
    VendorArgs,
    VerifyArgs,
    parsed,
)

if TYPE_CHECKING:
    from builder.cli.context import Context

Handler = Callable[["Context", argparse.Namespace], int]


def cmd_validate(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.stacks import cmd_validate

    return cmd_validate(ctx, parsed(ValidateArgs, args))


def cmd_schema(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.stacks import cmd_schema

    return cmd_schema(ctx, parsed(SchemaArgs, args))


def cmd_check(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.stacks import cmd_check

    return cmd_check(ctx, parsed(CheckArgs, args))


def cmd_new(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.stacks import cmd_new

    return cmd_new(ctx, parsed(NewArgs, args))


def cmd_lock(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.locking import cmd_lock

    return cmd_lock(ctx, parsed(LockArgs, args))


def cmd_render(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.building import cmd_render

    return cmd_render(ctx, parsed(RenderArgs, args))


def cmd_plan(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.building import cmd_plan

    return cmd_plan(ctx, parsed(PlanArgs, args))


def cmd_build(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.building import cmd_build

    return cmd_build(ctx, parsed(BuildArgs, args))


def cmd_verify_reproducible(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.verifying import cmd_verify_reproducible

    return cmd_verify_reproducible(ctx, parsed(VerifyArgs, args))


def cmd_smoke(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.building import cmd_smoke

    return cmd_smoke(ctx, parsed(SmokeArgs, args))


def cmd_publish(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.publishing import cmd_publish

    return cmd_publish(ctx, parsed(PublishArgs, args))


def cmd_vendor(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.vendoring import cmd_vendor

    return cmd_vendor(ctx, parsed(VendorArgs, args))


def cmd_import(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.vendoring import cmd_import

    return cmd_import(ctx, parsed(ImportArgs, args))


def cmd_run(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.running import cmd_run

    return cmd_run(ctx, parsed(RunArgs, args))


def cmd_shell(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.running import cmd_shell

    return cmd_shell(ctx, parsed(ShellArgs, args))


def cmd_inspect(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.handing import cmd_inspect

    return cmd_inspect(ctx, parsed(InspectArgs, args))


def cmd_diff(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.handing import cmd_diff

    return cmd_diff(ctx, parsed(DiffArgs, args))


def cmd_sbom(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.handing import cmd_sbom

    return cmd_sbom(ctx, parsed(SbomArgs, args))


def cmd_doctor(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.doctoring import cmd_doctor

    return cmd_doctor(ctx, parsed(DoctorArgs, args))


def cmd_gc(ctx: Context, args: argparse.Namespace) -> int:
    from builder.cli.tidying import cmd_gc

    return cmd_gc(ctx, parsed(GcArgs, args))
