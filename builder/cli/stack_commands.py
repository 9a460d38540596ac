"""The commands that make a stack, each declared once: author it (new, validate, schema, check), lock
it, and build it (plan, render, build, smoke, shell, verify-reproducible). A command is its options'
frozen dataclass, each field with its flag, registered in DECLARED with what `stackbuild --help` says
of it and the function that runs it (builder.cli.declare); the field order is argparse's."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Annotated

from builder.cli.arguments import (
    CacheFrom,
    CacheTo,
    DefaultStack,
    Devices,
    Engines,
    Jobs,
    Json,
    NoCompileCache,
    PrintOnly,
    Stack,
    StageArch,
    arch_option,
    arches_option,
    engine_option,
    output_option,
    registry_option,
    revision_option,
)
from builder.cli.declare import CommandTable, option, positional, switch
from builder.model.chips import CHIPS

DECLARED = CommandTable()
AUTHOR, BUILD = "author a stack", "build"


@DECLARED.command(
    "new",
    task=AUTHOR,
    summary="write a manifest for a CANN release from the catalog",
    help="write a manifest for a CANN release with the catalog's packages",
    example="stackbuild new 8.5.0 --chip 910b",
    runs="stacks.cmd_new",
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class NewArgs:
    version: Annotated[str, positional("CANN version, e.g. 8.3.RC1")]
    chip: Annotated[
        str, option(required=True, help=f"NPU chip: {', '.join(CHIPS)} (the release's catalog says which it has)")
    ]
    from_stack: Annotated[
        str | None,
        option(
            "--from", help="stack to copy the rest from (default: stackbuild's template of the public upstream layers)"
        ),
    ]
    name: Annotated[str | None, option(help="stack name (default: VERSION-CHIP)")]
    user: Annotated[
        str | None,
        option(
            metavar="NAME:UID:GID",
            help="who the images run as: a user made in them (default HwHiAiUser:1000:1000, CANN's driver user; "
            "this host's: `id HwHiAiUser`), or root (--from: that stack's)",
        ),
    ]
    output: Annotated[Path | None, output_option("file to write (default stacks/<name>.yaml)")]


@DECLARED.command(
    "validate",
    task=AUTHOR,
    summary="check manifests against the schema and the dependency graph",
    example="stackbuild validate stacks/*.yaml",
    runs="stacks.cmd_validate",
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class ValidateArgs:
    manifests: Annotated[list[str], positional(nargs="+", metavar="MANIFEST")]


@DECLARED.command(
    "schema",
    task=AUTHOR,
    summary="print the manifest JSON Schema (for editors)",
    example="stackbuild schema > stackbuild.schema.json",
    runs="stacks.cmd_schema",
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class SchemaArgs:
    pass


@DECLARED.command(
    "check",
    task=AUTHOR,
    summary="check toolkit, chip, driver, OS and Python against the CANN catalog",
    help="check toolkit x chip x driver x OS x Python against the CANN catalog",
    example="stackbuild check 8.5.0",
    runs="stacks.cmd_check",
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class CheckArgs:
    stack: Stack
    allow_unsupported: Annotated[bool, switch("report known-bad combinations, don't fail")]


@DECLARED.command(
    "lock",
    task=AUTHOR,
    summary="pin a stack into lockfiles/<name>.lock.json, or --check it",
    help="resolve a stack into lockfiles/<name>.lock.json, or check it (--check)",
    example="stackbuild lock 8.5.0 --arch x86_64 --arch aarch64",
    runs="locking.cmd_lock",
    uses_cache=True,
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class LockArgs:
    stack: Stack
    check: Annotated[
        bool,
        switch(
            "exit 1 with a diff if a plain `lock` would change the lock (a branch that moved upstream is only a note)"
        ),
    ]
    update: Annotated[
        str | None,
        option(
            nargs="?",
            const=":all",  # builder.lock.relock.UPDATE_ALL (not imported: declaring loads no command's code)
            metavar="COMPONENT",
            help="move git pins to what their refs name now: all of them, or only COMPONENT's (a plain `lock` keeps "
            "every pin its source still serves); after STACK, e.g. `lock 8.5.0 --update tilelang-ascend`",
        ),
    ]
    arch: Annotated[
        list[str] | None,  # None: this host's
        arches_option(
            "architectures to resolve (bases, packages, system and Python packages; repeatable; default: this "
            "host's); the others keep their pins while the manifest's entries for them are unchanged"
        ),
    ]
    allow_unsupported: Annotated[bool, switch("lock a known-bad combination anyway")]


@DECLARED.command(
    "plan",
    task=BUILD,
    summary="show each stage as cached or to build, and why",
    example="stackbuild plan reference --json",
    runs="building.cmd_plan",
    uses_cache=True,
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class PlanArgs:
    stack: DefaultStack
    arch: StageArch
    json: Json
    engine: Engines


@DECLARED.command(
    "render",
    task=BUILD,
    summary="write the stages' Dockerfiles",
    help="write the stages' Dockerfiles (to stdout, or one file per stage in -o DIR)",
    example="stackbuild render reference -o /tmp/dockerfiles",
    runs="building.cmd_render",
    uses_cache=True,
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class RenderArgs:
    stack: DefaultStack
    arch: StageArch
    output: Annotated[Path | None, output_option("directory to write <stage>.Dockerfile files into")]


@DECLARED.command(
    "build",
    task=BUILD,
    summary="build the stack from its lock, probe each stage, smoke the result",
    example="stackbuild build reference --jobs 2",
    runs="building.cmd_build",
    uses_cache=True,
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class BuildArgs:
    stack: DefaultStack
    arch: StageArch
    jobs: Jobs
    frozen: Annotated[bool, switch("fail instead of building sources or a base that differ from the lock")]
    no_smoke: Annotated[bool, switch("skip the smoke launch")]
    allow_unsupported: Annotated[bool, switch("when the stack has no lock yet: lock a known-bad combination")]
    preflight: Annotated[
        bool,
        switch(
            "only check what needs no engine (the combination, what a first lock needs) and exit: "
            "`nox -s build-stack` runs it before setting up the host"
        ),
    ]
    engine: Engines
    cache_from: CacheFrom
    cache_to: CacheTo
    no_compile_cache: NoCompileCache


@DECLARED.command(
    "smoke",
    task=BUILD,
    summary="run the smoke command an image carries (no checkout needed)",
    help="run the smoke command an image carries (no checkout needed), with the NPU if the host has one",
    example="stackbuild smoke registry.example.com/team/reference:lock-1a2b3c4d5e6f",
    runs="building.cmd_smoke",
    uses_cache=True,
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class SmokeArgs:
    image: Annotated[str, positional("image reference (e.g. a tag printed by build)")]
    stack: Annotated[
        str | None,  # None: the smoke command the image carries
        option(help="run this stack's smoke command instead of the one the image carries in its labels"),
    ]


@DECLARED.command(
    "shell",
    task=BUILD,
    summary="a shell in a stage's image, or just before its failed step",
    help="a shell in a stage's image with the stage's environment, or, after the stage failed to build, in its "
    "state just before the failed step (which it prints, to run again there)",
    example="stackbuild shell reference runtime",
    runs="running.cmd_shell",
    uses_cache=True,
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class ShellArgs:
    stack: Stack
    stage: Annotated[str, positional("stage name (as `stackbuild plan` lists them)")]
    command: Annotated[
        list[str],
        positional(
            "command instead of bash (after --, as with run: [--] CMD ARGS...)",
            nargs=argparse.REMAINDER,
        ),
    ]
    arch: Annotated[str | None, arch_option("architecture (default: this host's)")]
    device: Devices
    print: PrintOnly


@DECLARED.command(
    "verify-reproducible",
    task=BUILD,
    summary="build twice from nothing and compare every stage",
    help="build the stack twice from nothing (no builder cache, no stage image reused; the second time from a "
    "fresh clone of the checkout elsewhere with another origin URL, files touched, another umask and time "
    "zone) and compare every stage's image id; for one that differs, the files that differ and how; exit 1 "
    "when anything differs",
    example="stackbuild verify-reproducible reference --at HEAD~1",
    runs="verifying.cmd_verify_reproducible",
    uses_cache=True,
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class VerifyArgs:
    stack: DefaultStack
    arch: StageArch
    at: Annotated[
        str | None,
        option(
            type=revision_option,
            metavar="REV",
            help="build the second time from this commit of the checkout (a commit, branch or tag; its lock must be "
            "the same); default: HEAD with the working tree's uncommitted changes",
        ),
    ]
    second_engine: Annotated[
        str | None, option(type=engine_option, metavar="ENGINE", help="build the second time on this Docker engine")
    ]
    registry: Annotated[
        str | None,
        option(
            metavar="REGISTRY/NAMESPACE",
            type=registry_option,
            help="also push both builds' stages there and compare their manifest digests",
        ),
    ]


@DECLARED.command(
    "devcontainer",
    task=BUILD,
    summary="write .devcontainer/devcontainer.json for the stack's devel image",
    help="write .devcontainer/devcontainer.json (VS Code, the devcontainers CLI) for the stack's devel image, "
    "with this host's NPUs and driver paths as `run` gives them",
    example="stackbuild devcontainer reference -o ~/work/kernels",
    runs="running.cmd_devcontainer",
    uses_cache=True,
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class DevcontainerArgs:
    stack: DefaultStack
    arch: StageArch
    output: Annotated[Path | None, output_option("the folder to open in the editor (default: the current directory)")]
    device: Devices
