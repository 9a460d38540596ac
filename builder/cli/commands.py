"""The command table: every subcommand's options, and the function that runs it by name.

The implementations (builder.cli.stacks, .locking, .building) are imported only when their
command runs, so `stackbuild validate` does not pay for the Docker client and the build core.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import TypeAlias

from builder.cli import dispatch
from builder.model.arch import ARCHITECTURES
from builder.model.chips import CHIPS
from builder.model.registry import registry_repo

SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


# Commands that read or write the cache's entries (inputs, records, git mirrors): they hold its
# shared lock while they run, so `gc` (which must hold it alone) never removes what one is using.
CACHE_COMMANDS = frozenset(
    {"lock", "render", "plan", "build", "verify-reproducible", "smoke", "publish", "vendor", "import", "shell"}
)


# `stackbuild --help` lists the commands by task, each with a line that fits a terminal; a
# command's own --help says all.
TASKS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (
        "author a stack",
        (
            ("new", "write a manifest for a CANN release from the catalog"),
            ("validate", "check manifests against the schema and the dependency graph"),
            ("schema", "print the manifest JSON Schema (for editors)"),
            ("check", "check toolkit, chip, driver, OS and Python against the CANN catalog"),
            ("lock", "pin a stack into lockfiles/<name>.lock.json, or --check it"),
        ),
    ),
    (
        "build",
        (
            ("plan", "show each stage as cached or to build, and why"),
            ("render", "write the stages' Dockerfiles"),
            ("build", "build the stack from its lock, probe each stage, smoke the result"),
            ("smoke", "run the smoke command an image carries (no checkout needed)"),
            ("shell", "a shell in a stage's image, or just before its failed step"),
            ("verify-reproducible", "build twice from nothing and compare every stage"),
        ),
    ),
    (
        "share",
        (
            ("publish", "build every architecture and push one image index per tag"),
            ("vendor", "write everything a build needs into one directory, for an offline machine"),
            ("import", "fill the cache from a vendor directory, every file checked"),
        ),
    ),
    (
        "hand over",
        (
            ("run", "start an image with this host's NPUs and driver mounted"),
            ("inspect", "what a final image holds, and where it came from"),
            ("diff", "what differs between two final images"),
            ("sbom", "a CycloneDX SBOM of a final image"),
            ("doctor", "check this host for a stack, with a remedy per failure"),
        ),
    ),
    ("tidy", (("gc", "remove the stage images no recent build used"),)),
)


def task_listing() -> str:
    """The commands by task, for `stackbuild --help`."""
    width = max(len(name) for _, commands in TASKS for name, _ in commands)
    blocks = [
        f"{task}:\n" + "\n".join(f"  {name:<{width}}  {summary}" for name, summary in commands)
        for task, commands in TASKS
    ]
    return "\n\n".join(blocks)


# One line a person can copy from each command's --help (a test holds every command to having one).
EXAMPLES = {
    "validate": "stackbuild validate stacks/*.yaml",
    "schema": "stackbuild schema > stackbuild.schema.json",
    "check": "stackbuild check 8.5.0",
    "new": "stackbuild new 8.5.0 --chip 910b",
    "lock": "stackbuild lock 8.5.0 --arch x86_64 --arch aarch64",
    "render": "stackbuild render reference -o /tmp/dockerfiles",
    "plan": "stackbuild plan reference --json",
    "build": "stackbuild build reference --jobs 2",
    "verify-reproducible": "stackbuild verify-reproducible reference --at HEAD~1",
    "smoke": "stackbuild smoke registry.example.com/team/reference:lock-1a2b3c4d5e6f",
    "publish": "stackbuild publish 8.5.0 --registry registry.example.com/team --alias latest",
    "vendor": "stackbuild vendor 8.5.0 -o /media/usb/8.5.0-bundle",
    "import": "stackbuild import /media/usb/8.5.0-bundle",
    "run": "stackbuild run registry.example.com/team/8.5.0:lock-1a2b3c4d5e6f -- npu-smi info",
    "shell": "stackbuild shell reference runtime",
    "inspect": "stackbuild inspect registry.example.com/team/8.5.0:lock-1a2b3c4d5e6f",
    "diff": "stackbuild diff team/8.5.0:lock-1a2b3c4d5e6f team/8.5.0:lock-6f5e4d3c2b1a",
    "sbom": "stackbuild sbom stackbuild/reference:8.5.0-910b-debian12-py3.11-x86_64 -o sbom.json",
    "doctor": "stackbuild doctor 8.5.0",
    "gc": "stackbuild gc --dry-run",
}


class HelpFormatter(argparse.HelpFormatter):
    """argparse's, but the example stays one line, to copy as it is."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return indent + text if text.startswith("example: ") else super()._fill_text(text, width, indent)


def command(sub: SubParsers, name: str, target: dispatch.Handler, text: str) -> argparse.ArgumentParser:
    """A subcommand whose --help starts with what it does and ends with an example, run by target."""
    parser = sub.add_parser(
        name, help=text, description=text, epilog=f"example: {EXAMPLES[name]}", formatter_class=HelpFormatter
    )
    parser.set_defaults(target=target, uses_cache=name in CACHE_COMMANDS)
    return parser


def default_jobs() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def registry_option(text: str) -> str:
    try:
        return registry_repo(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def alias_option(text: str) -> str:
    # A tag of its own (<alias>) and with -runtime: a Docker tag has at most 128 characters.
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,100}", text):
        raise argparse.ArgumentTypeError(f"{text[:80]!r} is not a tag (letters, digits, _ . -; e.g. latest)")
    return text


def revision_option(text: str) -> str:
    # What a commit, branch or tag name (or HEAD~1) looks like; never an option to git.
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_./~^@{}-]{0,199}", text):
        raise argparse.ArgumentTypeError(f"{text[:80]!r} is not a git revision (e.g. HEAD~1, main, a commit id)")
    return text


def engine_option(text: str) -> str:
    if not re.fullmatch(r"(unix|tcp|ssh)://[^\s]+", text):
        raise argparse.ArgumentTypeError(
            f"{text[:80]!r} is not a Docker engine address: unix:///var/run/docker.sock, tcp://host:2376 "
            "(TLS from DOCKER_TLS_VERIFY and DOCKER_CERT_PATH) or ssh://user@host"
        )
    return text


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


def _stage_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "stack", nargs="?", help="stack name or manifest (default: the project's only stack, else reference)"
    )
    p.set_defaults(takes_default_stack=True)  # main() names it: which it is depends on the project
    p.add_argument("--arch", choices=ARCHITECTURES, help="architecture to build for (default: this host's)")


def _cache_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--engine",
        action="append",
        default=[],
        type=engine_option,
        help="a Docker engine to build on (repeatable: independent stages are spread over them, sharing "
        "images through the registry cache, so --cache-to is needed; the first holds the results; "
        "default DOCKER_HOST or the local engine)",
    )
    p.add_argument(
        "--cache-from",
        metavar="REGISTRY/REPO",
        type=registry_option,
        help="registry stage cache to pull missing stages from, probed before use (default: the site's cache_registry)",
    )
    p.add_argument(
        "--cache-to",
        metavar="REGISTRY/REPO",
        type=registry_option,
        help="registry stage cache to push stages to once their probes pass (default: the site's cache_registry "
        "when its cache_push is true); auth from `docker login`",
    )


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
    _stage_options(p)
    p.add_argument("-o", "--output", type=Path, help="directory to write <stage>.Dockerfile files into")
    p = command(sub, "plan", dispatch.cmd_plan, "show each stage as cached or to build, and why")
    _stage_options(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = command(sub, "build", dispatch.cmd_build, "build the stack from its lock, probe each stage, smoke the result")
    _stage_options(p)
    p.add_argument(
        "--jobs",
        "-j",
        type=positive,
        default=default_jobs(),
        help="stages built at once (default: the cores, at most 4)",
    )
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
    _cache_options(p)
    p = command(
        sub,
        "verify-reproducible",
        dispatch.cmd_verify_reproducible,
        "build the stack twice from nothing (no builder cache, no stage image reused; the second time from a "
        "fresh clone of the checkout elsewhere with another origin URL, files touched, another umask and time "
        "zone) and compare every stage's image id; for one that differs, the files that differ and how; exit 1 "
        "when anything differs",
    )
    _stage_options(p)
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


def add_publish_commands(sub: SubParsers) -> None:
    p = command(
        sub,
        "publish",
        dispatch.cmd_publish,
        "build every architecture from the lock (frozen), smoke each, and push one image index per tag: "
        "<ver>-<chip>-<os><osver>-py<x.y>[-runtime], the immutable lock-<digest>[-runtime], and any --alias",
    )
    p.add_argument("stack", help="stack name or manifest path")
    p.add_argument(
        "--registry",
        required=True,
        metavar="REGISTRY/NAMESPACE",
        type=registry_option,
        help="where the images go, as REGISTRY/NAMESPACE/<stack>:<tag>; auth from `docker login`",
    )
    p.add_argument("--alias", action="append", default=[], type=alias_option, help="another tag (repeatable)")
    p.add_argument(
        "--arch",
        action="append",
        choices=ARCHITECTURES,
        help="architectures to publish (repeatable; default: every one the manifest lists; others build under "
        "emulation: `python -m builder.hostsetup --foreign ARCH`)",
    )
    p.add_argument(
        "--jobs",
        "-j",
        type=positive,
        default=default_jobs(),
        help="stages built at once (default: the cores, at most 4)",
    )
    _cache_options(p)


def add_bundle_commands(sub: SubParsers) -> None:
    p = command(
        sub,
        "vendor",
        dispatch.cmd_vendor,
        "write everything a build of the stack needs (lock, toolkit packages, base tarballs, .debs, wheels, git "
        "commits) into one directory with a manifest of sha256s, for a machine without outside access",
    )
    p.add_argument("stack", help="stack name or manifest path")
    p.add_argument("-o", "--output", type=Path, required=True, help="directory to create (must not exist or be empty)")
    p.add_argument(
        "--arch",
        action="append",
        choices=ARCHITECTURES,
        help="architectures to gather (repeatable; default: every one the manifest lists)",
    )
    p = command(
        sub,
        "import",
        dispatch.cmd_import,
        "fill the cache from a `stackbuild vendor` directory, checking every file's sha256 and every git object",
    )
    p.add_argument("bundle", type=Path, help="the directory vendor wrote")


def add_handoff_commands(sub: SubParsers) -> None:
    p = command(
        sub,
        "run",
        dispatch.cmd_run,
        "start an image with this host's NPUs and driver mounted as CANN's docker run does (none on a host "
        "without /dev/davinci*); STACKBUILD_HOST_ROOT looks for them under another root",
    )
    p.add_argument("image", help="image tag or id (e.g. one printed by build or publish)")
    p.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        help="command to run instead of the image's; options go before IMAGE, as with docker run ([--] CMD ARGS...)",
    )
    _container_options(p)
    p = command(
        sub,
        "shell",
        dispatch.cmd_shell,
        "a shell in a stage's image with the stage's environment, or, after the stage failed to build, in its "
        "state just before the failed step (which it prints, to run again there)",
    )
    p.add_argument("stack", help="stack name or manifest path")
    p.add_argument("stage", help="stage name (as `stackbuild plan` lists them)")
    p.add_argument(
        "command", nargs=argparse.REMAINDER, help="command instead of bash (after --, as with run: [--] CMD ARGS...)"
    )
    p.add_argument("--arch", choices=ARCHITECTURES, help="architecture (default: this host's)")
    _container_options(p)
    p = command(
        sub,
        "inspect",
        dispatch.cmd_inspect,
        "what a final image holds, from its labels and the lock it carries: stack, toolkit and its packages "
        "(sha256), each component's repository and commit, the certified driver and firmware, the base, the lock "
        "digest, system and Python packages",
    )
    p.add_argument("image", help="image tag or id (pulled when not here)")
    _image_options(p)
    p = command(
        sub,
        "diff",
        dispatch.cmd_diff,
        "what differs between two final images: components (commit a1b2 -> c3d4), toolkit packages, system and "
        "Python packages, the base",
    )
    p.add_argument("first", metavar="IMAGE_A", help="image tag or id")
    p.add_argument("second", metavar="IMAGE_B", help="image tag or id")
    _image_options(p)
    p.add_argument("--exit-code", action="store_true", help="exit 1 when they differ (as git diff --exit-code)")
    p = command(
        sub,
        "sbom",
        dispatch.cmd_sbom,
        "a CycloneDX 1.6 JSON SBOM of a final image: the stack's components (repository and commit, or tree "
        "hash) and toolkit packages (sha256) from the lock it carries, every Debian and Python package in it "
        "with its version; checked against the CycloneDX schema",
    )
    p.add_argument("image", help="image tag or id (pulled when not here)")
    p.add_argument("-o", "--output", type=Path, help="file to write (default: standard output)")
    _pull_arch_option(p)
    p = command(
        sub,
        "doctor",
        dispatch.cmd_doctor,
        "check this host for a stack: Docker engine, disk, emulation for other architectures, the registry; on "
        "an Ascend host the driver and firmware against what the stack certifies, the devices, the driver's "
        "user, kernel headers; a remedy per failure; exit 1 when the host cannot build and run it",
    )
    p.add_argument("stack", nargs="?", help="stack name or manifest (default: the host checks only)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = command(
        sub,
        "gc",
        dispatch.cmd_gc,
        "remove the stage images no recent build used, by the builds' records in the cache (every checkout's "
        "builds count), keeping the last --keep builds of each stack and architecture; says how much it freed",
    )
    p.add_argument("--dry-run", action="store_true", help="list what would go, remove nothing")
    p.add_argument(
        "--keep", type=positive, default=3, help="builds kept per stack and architecture (default %(default)s)"
    )
    p.add_argument(
        "--inputs",
        action="store_true",
        help="also remove cached inputs (installers, .debs, wheels, base tarballs, git mirrors) no kept build "
        "names: upstream may no longer serve them, so off by default",
    )
    p.add_argument(
        "--include-recent",
        action="store_true",
        help="also remove images no build of this cache made that were tagged in the last 24 hours (by default "
        "they stay: a build using another cache on the same engine may be using them)",
    )
    p.add_argument(
        "--verify",
        action="store_true",
        help="hash every cached file again and remove those whose content is not their sha256 name",
    )


def _container_options(p: argparse.ArgumentParser) -> None:
    """What run and shell share: which NPUs, and the docker run line instead of running it."""
    p.add_argument(
        "--device", action="append", type=int, default=[], metavar="N", help="use /dev/davinciN only (repeatable)"
    )
    p.add_argument("--print", action="store_true", help="print the docker run line instead of running it")


def _pull_arch_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--arch", choices=ARCHITECTURES, help="the variant to pull when the image is not here (default: this host's)"
    )


def _image_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")
    _pull_arch_option(p)
