"""The options of the commands that make a stack: author it (validate, schema, check, new), lock
it, and build it (render, plan, build, verify-reproducible, smoke)."""

from __future__ import annotations

from pathlib import Path

from builder.cli import dispatch
from builder.cli.arguments import (
    cache_options,
    engine_option,
    jobs_option,
    registry_option,
    revision_option,
    stage_options,
)
from builder.cli.commands import SubParsers, command
from builder.model.arch import ARCHITECTURES
from builder.model.chips import CHIPS


def add_stack_commands(sub: SubParsers) -> None:
    p = command(sub, "validate", dispatch.cmd_validate, "check manifests against the schema and the dependency graph")
    p.add_argument("manifests", nargs="+", metavar="MANIFEST")
    p = command(sub, "schema", dispatch.cmd_schema, "print the manifest JSON Schema (for editors)")
    p = command(
        sub, "check", dispatch.cmd_check, "check toolkit x chip x driver x OS x Python against the CANN catalog"
    )
    p.add_argument("stack", help="stack name or manifest path")
    p.add_argument("--allow-unsupported", action="store_true", help="report known-bad combinations, don't fail")
    p = command(sub, "new", dispatch.cmd_new, "write a manifest for a CANN release with the catalog's packages")
    p.add_argument("version", help="CANN version, e.g. 8.3.RC1")
    p.add_argument(
        "--chip", required=True, help=f"NPU chip: {', '.join(CHIPS)} (the release's catalog says which it has)"
    )
    p.add_argument(
        "--from",
        dest="from_stack",
        help="stack to copy the rest from (default: stackbuild's template of the public upstream layers)",
    )
    p.add_argument("--name", help="stack name (default: VERSION-CHIP)")
    p.add_argument("-o", "--output", type=Path, help="file to write (default stacks/<name>.yaml)")


def add_lock_commands(sub: SubParsers) -> None:
    p = command(
        sub, "lock", dispatch.cmd_lock, "resolve a stack into lockfiles/<name>.lock.json, or check it (--check)"
    )
    p.add_argument("stack", help="stack name or manifest path")
    p.add_argument(
        "--check",
        action="store_true",
        help="exit 1 with a diff if a plain `lock` would change the lock (a branch that moved upstream is only a note)",
    )
    p.add_argument(
        "--update",
        nargs="?",
        const=":all",  # builder.lock.relock.UPDATE_ALL (not imported: this table loads no command's code)
        metavar="COMPONENT",
        help="move git pins to what their refs name now: all of them, or only COMPONENT's (a plain `lock` keeps "
        "every pin its source still serves); after STACK, e.g. `lock 8.5.0 --update tilelang-ascend`",
    )
    p.add_argument(
        "--arch",
        action="append",
        choices=ARCHITECTURES,
        help="architectures to resolve (bases, packages, system and Python packages; repeatable; default: this "
        "host's); the others keep their pins while the manifest's entries for them are unchanged",
    )
    p.add_argument("--allow-unsupported", action="store_true", help="lock a known-bad combination anyway")


def add_build_commands(sub: SubParsers) -> None:
    p = command(
        sub,
        "render",
        dispatch.cmd_render,
        "write the stages' Dockerfiles (to stdout, or one file per stage in -o DIR)",
    )
    stage_options(p)
    p.add_argument("-o", "--output", type=Path, help="directory to write <stage>.Dockerfile files into")
    p = command(sub, "plan", dispatch.cmd_plan, "show each stage as cached or to build, and why")
    stage_options(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = command(sub, "build", dispatch.cmd_build, "build the stack from its lock, probe each stage, smoke the result")
    stage_options(p)
    jobs_option(p)
    p.add_argument(
        "--frozen", action="store_true", help="fail instead of building sources or a base that differ from the lock"
    )
    p.add_argument("--no-smoke", action="store_true", help="skip the smoke launch")
    p.add_argument(
        "--allow-unsupported", action="store_true", help="when the stack has no lock yet: lock a known-bad combination"
    )
    p.add_argument(
        "--preflight",
        action="store_true",
        help="only check what needs no engine (the combination, what a first lock needs) and exit: "
        "`nox -s build-stack` runs it before setting up the host",
    )
    cache_options(p)
    p = command(
        sub,
        "verify-reproducible",
        dispatch.cmd_verify_reproducible,
        "build the stack twice from nothing (no builder cache, no stage image reused; the second time from a "
        "fresh clone of the checkout elsewhere with another origin URL, files touched, another umask and time "
        "zone) and compare every stage's image id; for one that differs, the files that differ and how; exit 1 "
        "when anything differs",
    )
    stage_options(p)
    p.add_argument(
        "--at",
        type=revision_option,
        metavar="REV",
        help="build the second time from this commit of the checkout (a commit, branch or tag; its lock must be "
        "the same); default: HEAD with the working tree's uncommitted changes",
    )
    p.add_argument(
        "--second-engine", type=engine_option, metavar="ENGINE", help="build the second time on this Docker engine"
    )
    p.add_argument(
        "--registry",
        metavar="REGISTRY/NAMESPACE",
        type=registry_option,
        help="also push both builds' stages there and compare their manifest digests",
    )
    p = command(
        sub,
        "smoke",
        dispatch.cmd_smoke,
        "run the smoke command an image carries (no checkout needed), with the NPU if the host has one",
    )
    p.add_argument("image", help="image reference (e.g. a tag printed by build)")
    p.add_argument(
        "--stack",
        help="run this stack's smoke command instead of the one the image carries in its labels",
    )
