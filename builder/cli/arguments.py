"""What several commands declare alike, each declared once: option values checked as argparse reads
them (a registry, a tag, a git revision, an engine address, a positive number), the options commands
share (a stack, --arch, --jobs, the engines and registry stage caches a build uses, a container's
devices, --json, -o) as `Annotated` types a command's field takes, and the architecture an --arch
left out means."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import Annotated

from builder.cli.declare import Flag, option, positional, switch
from builder.model.arch import ARCHITECTURES, Arch
from builder.model.errors import InputError
from builder.model.registry import registry_repo


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


def target_arch(arch: str | None) -> Arch:
    """The architecture --arch names, else this host's."""
    if arch:
        return Arch(arch)
    try:
        return Arch.host()
    except ValueError as err:
        raise InputError(f"this host's architecture is not one stackbuild builds for ({err}): pass --arch") from err


def arch_option(help: str) -> Flag:
    """--arch: one architecture (None: the command says which)."""
    return option("--arch", choices=ARCHITECTURES, help=help)


def arches_option(help: str) -> Flag:
    """--arch, repeatable: the architectures a command covers (None: the command says which)."""
    return option("--arch", action="append", choices=ARCHITECTURES, help=help)


def output_option(help: str, *, required: bool = False) -> Flag:
    return option("-o", "--output", type=Path, required=required, help=help)


# A stack named on the command line.
Stack = Annotated[str, positional("stack name or manifest path")]
DefaultStack = Annotated[
    str,
    positional(
        "stack name or manifest (default: the project's only stack, else reference)", nargs="?", default_stack=True
    ),
]
# The architecture a stage is made for: render, plan, build, verify-reproducible.
StageArch = Annotated[str | None, arch_option("architecture to build for (default: this host's)")]
# The variant of a multi-architecture image to look into: inspect, diff, sbom.
PullArch = Annotated[str | None, arch_option("the variant to pull when the image is not here (default: this host's)")]
PulledImage = Annotated[str, positional("image tag or id (pulled when not here)")]
Json = Annotated[bool, switch("machine-readable output")]

# Where a build runs: build and publish.
Jobs = Annotated[
    int,
    option(
        "--jobs",
        "-j",
        type=positive,
        default=default_jobs(),
        help="stages built at once (default: the cores, at most 4)",
    ),
]
Engines = Annotated[
    list[str],
    option(
        "--engine",
        action="append",
        default=[],
        type=engine_option,
        help="a Docker engine to build on (repeatable: independent stages are spread over those that report "
        "the build's architecture, else over all under emulation, sharing images through the registry cache, "
        "so --cache-to is needed; the first holds the results; default DOCKER_HOST or the local engine; plan "
        "says which build the stages, natively or under emulation)",
    ),
]
CacheFrom = Annotated[
    str | None,
    option(
        "--cache-from",
        metavar="REGISTRY/REPO",
        type=registry_option,
        help="registry stage cache to pull missing stages from, probed before use (default: the site's cache_registry)",
    ),
]
CacheTo = Annotated[
    str | None,
    option(
        "--cache-to",
        metavar="REGISTRY/REPO",
        type=registry_option,
        help="registry stage cache to push stages to once their probes pass (default: the site's cache_registry "
        "when its cache_push is true); auth from `docker login`",
    ),
]
NoCompileCache = Annotated[
    bool,
    switch(
        "build components without their compile cache (the manifest's compile_cache: the images are the same "
        "either way; `stackbuild plan` shows each component's)"
    ),
]

# What run and shell share: which NPUs, and the docker run line instead of running it.
Devices = Annotated[
    list[int],
    option("--device", action="append", type=int, default=[], metavar="N", help="use /dev/davinciN only (repeatable)"),
]
PrintOnly = Annotated[bool, switch("print the docker run line instead of running it")]
