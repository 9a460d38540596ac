"""The commands that take what builds made further, each declared once (as builder.cli.stack_commands
declares its own): publish it, carry it to an offline machine (vendor, import), run and look into its
images (run, inspect, diff, sbom), check a host for it (doctor) and remove the stage images no build
uses any more (gc)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Annotated, TypeAlias

from builder.cli.arguments import (
    CacheFrom,
    CacheTo,
    Devices,
    Engines,
    Jobs,
    Json,
    NoCompileCache,
    PrintOnly,
    PullArch,
    PulledImage,
    Stack,
    alias_option,
    arches_option,
    output_option,
    positive,
    registry_option,
)
from builder.cli.declare import CommandTable, option, positional, switch
from builder.cli.stack_commands import ShellArgs

DECLARED = CommandTable()
SHARE, HAND_OVER, TIDY = "share", "hand over", "tidy"


@DECLARED.command(
    "publish",
    task=SHARE,
    summary="build every architecture and push one image index per tag",
    help="build every architecture from the lock (frozen), smoke each, and push one image index per tag: "
    "<ver>-<chip>-<os><osver>-py<x.y>[-runtime], the immutable lock-<digest>[-runtime], and any --alias",
    example="stackbuild publish 8.5.0 --registry registry.example.com/team --alias latest",
    runs="publishing.cmd_publish",
    uses_cache=True,
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class PublishArgs:
    stack: Stack
    registry: Annotated[
        str,
        option(
            required=True,
            metavar="REGISTRY/NAMESPACE",
            type=registry_option,
            help="where the images go, as REGISTRY/NAMESPACE/<stack>:<tag>; auth from `docker login`",
        ),
    ]
    alias: Annotated[list[str], option(action="append", default=[], type=alias_option, help="another tag (repeatable)")]
    arch: Annotated[
        list[str] | None,  # None: every one the manifest lists
        arches_option(
            "architectures to publish (repeatable; default: every one the manifest lists; others build under "
            "emulation: `python -m builder.hostsetup --foreign ARCH`)"
        ),
    ]
    jobs: Jobs
    engine: Engines
    cache_from: CacheFrom
    cache_to: CacheTo
    no_compile_cache: NoCompileCache


@DECLARED.command(
    "vendor",
    task=SHARE,
    summary="write everything a build needs into one directory, for an offline machine",
    help="write everything a build of the stack needs (lock, toolkit packages, base tarballs, .debs, wheels, git "
    "commits) into one directory with a manifest of sha256s, for a machine without outside access",
    example="stackbuild vendor 8.5.0 -o /media/usb/8.5.0-bundle",
    runs="vendoring.cmd_vendor",
    uses_cache=True,
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class VendorArgs:
    stack: Stack
    output: Annotated[Path, output_option("directory to create (must not exist or be empty)", required=True)]
    arch: Annotated[
        list[str] | None,  # None: every one the manifest lists
        arches_option("architectures to gather (repeatable; default: every one the manifest lists)"),
    ]


@DECLARED.command(
    "import",
    task=SHARE,
    summary="fill the cache from a vendor directory, every file checked",
    help="fill the cache from a `stackbuild vendor` directory, checking every file's sha256 and every git object",
    example="stackbuild import /media/usb/8.5.0-bundle",
    runs="vendoring.cmd_import",
    uses_cache=True,
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class ImportArgs:
    bundle: Annotated[Path, positional("the directory vendor wrote", type=Path)]


@DECLARED.command(
    "run",
    task=HAND_OVER,
    summary="start an image with this host's NPUs and driver mounted",
    help="start an image with this host's NPUs and driver mounted as CANN's docker run does (none on a host "
    "without /dev/davinci*); STACKBUILD_HOST_ROOT looks for them under another root",
    example="stackbuild run registry.example.com/team/8.5.0:lock-1a2b3c4d5e6f -- npu-smi info",
    runs="running.cmd_run",
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class RunArgs:
    image: Annotated[str, positional("image tag or id (e.g. one printed by build or publish)")]
    command: Annotated[
        list[str],
        positional(
            "command to run instead of the image's; options go before IMAGE, as with docker run ([--] CMD ARGS...)",
            nargs=argparse.REMAINDER,
        ),
    ]
    device: Devices
    print: PrintOnly
    format: Annotated[
        str,
        option(
            choices=("line", "k8s", "cdi"),
            default="line",
            help="with --print: the engine's run line (default), a Kubernetes Pod and the smoke's Job (YAML) "
            "asking the Ascend device plugin for --device's count of NPUs (default 1), or the run line naming "
            "the NPUs by the host's CDI spec (for Docker 25 or later)",
        ),
    ]


# What run and shell share: the command, which NPUs, and printing the docker run line instead.
ContainerArgs: TypeAlias = RunArgs | ShellArgs


@DECLARED.command(
    "inspect",
    task=HAND_OVER,
    summary="what a final image holds, and where it came from",
    help="what a final image holds, from its labels and the lock it carries: stack, toolkit and its packages "
    "(sha256), each component's repository and commit, the certified driver and firmware, the base, the lock "
    "digest, system and Python packages; of a published image (REGISTRY/NAMESPACE/STACK:TAG) also the "
    "provenance and SBOM attached beside it",
    example="stackbuild inspect registry.example.com/team/8.5.0:lock-1a2b3c4d5e6f",
    runs="handing.cmd_inspect",
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class InspectArgs:
    image: PulledImage
    json: Json
    arch: PullArch


@DECLARED.command(
    "diff",
    task=HAND_OVER,
    summary="what differs between two final images",
    help="what differs between two final images: components (commit a1b2 -> c3d4), toolkit packages, system and "
    "Python packages, the base",
    example="stackbuild diff team/8.5.0:lock-1a2b3c4d5e6f team/8.5.0:lock-6f5e4d3c2b1a",
    runs="handing.cmd_diff",
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class DiffArgs:
    first: Annotated[str, positional("image tag or id", metavar="IMAGE_A")]
    second: Annotated[str, positional("image tag or id", metavar="IMAGE_B")]
    json: Json
    arch: PullArch
    exit_code: Annotated[bool, switch("exit 1 when they differ (as git diff --exit-code)")]


@DECLARED.command(
    "sbom",
    task=HAND_OVER,
    summary="a CycloneDX SBOM of a final image",
    help="a CycloneDX 1.6 JSON SBOM of a final image: the stack's components (repository and commit, or tree "
    "hash) and toolkit packages (sha256) from the lock it carries, every Debian and Python package in it "
    "with its version; checked against the CycloneDX schema. Of a published image (REGISTRY/NAMESPACE/"
    "STACK:TAG) the one publish attached beside it, read from the registry (made from the image when none is)",
    example="stackbuild sbom stackbuild/reference:8.5.0-910b-debian12-py3.11-x86_64 -o sbom.json",
    runs="handing.cmd_sbom",
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class SbomArgs:
    image: PulledImage
    output: Annotated[Path | None, output_option("file to write (default: standard output)")]
    arch: PullArch


@DECLARED.command(
    "doctor",
    task=HAND_OVER,
    summary="check this host for a stack, with a remedy per failure",
    help="check this host for a stack: Docker engine, disk, emulation for other architectures, the registry; on "
    "an Ascend host the driver and firmware against what the stack certifies, the devices, the driver's "
    "user, kernel headers; a remedy per failure; exit 1 when the host cannot build and run it",
    example="stackbuild doctor 8.5.0",
    runs="doctoring.cmd_doctor",
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class DoctorArgs:
    stack: Annotated[
        str | None,
        positional(
            "stack name or manifest, or an image tag a build printed (the host checked against the driver it "
            "was certified for; default: the host checks only)",
            nargs="?",
        ),
    ]
    json: Json


@DECLARED.command(
    "gc",
    task=TIDY,
    summary="remove the stage images no recent build used",
    help="remove the stage images no recent build used, by the builds' records in the cache (every checkout's "
    "builds count), keeping the last --keep builds of each stack and architecture; says how much it freed",
    example="stackbuild gc --dry-run",
    runs="tidying.cmd_gc",
)
@dataclasses.dataclass(frozen=True, kw_only=True)
class GcArgs:
    dry_run: Annotated[bool, switch("list what would go, remove nothing")]
    keep: Annotated[
        int, option(type=positive, default=3, help="builds kept per stack and architecture (default %(default)s)")
    ]
    inputs: Annotated[
        bool,
        switch(
            "also remove cached inputs (installers, .debs, wheels, base tarballs, git mirrors) no kept build "
            "names: upstream may no longer serve them, so off by default"
        ),
    ]
    include_recent: Annotated[
        bool,
        switch(
            "also remove images no build of this cache made that were tagged in the last 24 hours (by default "
            "they stay: a build using another cache on the same engine may be using them)"
        ),
    ]
    verify: Annotated[
        bool, switch("hash every cached file again and remove those whose content is not their sha256 name")
    ]
    compile_caches: Annotated[
        bool,
        switch(
            "also remove the components' compile caches (the builder's cache mounts) and their tool images: the "
            "next build of an edited component compiles every file again"
        ),
    ]
