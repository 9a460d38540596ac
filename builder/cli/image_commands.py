"""The options of the commands that take what builds made further: publish it, carry it to an
offline machine (vendor, import), run and look into its images (run, shell, inspect, diff, sbom),
check a host for it (doctor) and remove the stage images no build uses any more (gc)."""

from __future__ import annotations

import argparse
from pathlib import Path

from builder.cli import dispatch
from builder.cli.arguments import (
    alias_option,
    cache_options,
    container_options,
    image_options,
    jobs_option,
    positive,
    pull_arch_option,
    registry_option,
)
from builder.cli.commands import SubParsers, command
from builder.model.arch import ARCHITECTURES


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
    jobs_option(p)
    cache_options(p)


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
    container_options(p)
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
    container_options(p)
    p = command(
        sub,
        "inspect",
        dispatch.cmd_inspect,
        "what a final image holds, from its labels and the lock it carries: stack, toolkit and its packages "
        "(sha256), each component's repository and commit, the certified driver and firmware, the base, the lock "
        "digest, system and Python packages",
    )
    p.add_argument("image", help="image tag or id (pulled when not here)")
    image_options(p)
    p = command(
        sub,
        "diff",
        dispatch.cmd_diff,
        "what differs between two final images: components (commit a1b2 -> c3d4), toolkit packages, system and "
        "Python packages, the base",
    )
    p.add_argument("first", metavar="IMAGE_A", help="image tag or id")
    p.add_argument("second", metavar="IMAGE_B", help="image tag or id")
    image_options(p)
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
    pull_arch_option(p)
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
