"""What several commands declare alike: option values checked as argparse reads them (a registry,
a tag, a git revision, an engine address, a positive number) and the option groups commands share
(a stage's stack and architecture, the engines and registry caches a build uses, a container's
devices, the variant of an image to pull)."""

from __future__ import annotations

import argparse
import os
import re

from builder.model.arch import ARCHITECTURES
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


def stage_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "stack", nargs="?", help="stack name or manifest (default: the project's only stack, else reference)"
    )
    p.set_defaults(takes_default_stack=True)  # main() names it: which it is depends on the project
    p.add_argument("--arch", choices=ARCHITECTURES, help="architecture to build for (default: this host's)")


def jobs_option(p: argparse.ArgumentParser) -> None:
    """--jobs, as build and publish take it."""
    p.add_argument(
        "--jobs",
        "-j",
        type=positive,
        default=default_jobs(),
        help="stages built at once (default: the cores, at most 4)",
    )


def cache_options(p: argparse.ArgumentParser) -> None:
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


def container_options(p: argparse.ArgumentParser) -> None:
    """What run and shell share: which NPUs, and the docker run line instead of running it."""
    p.add_argument(
        "--device", action="append", type=int, default=[], metavar="N", help="use /dev/davinciN only (repeatable)"
    )
    p.add_argument("--print", action="store_true", help="print the docker run line instead of running it")


def pull_arch_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--arch", choices=ARCHITECTURES, help="the variant to pull when the image is not here (default: this host's)"
    )


def image_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")
    pull_arch_option(p)
