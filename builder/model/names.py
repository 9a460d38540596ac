"""Image names: every repository stackbuild names on an engine (stage images, finals, the states gc
and `shell` keep) starts with one prefix, `$STACKBUILD_IMAGE_PREFIX` (default `stackbuild`), so
another user of the same engine (the test suite) keeps to names of its own."""

from __future__ import annotations

import os
import re

from builder.model.errors import InputError

DEFAULT_PREFIX = "stackbuild"
# One component of a Docker repository name (the distribution spec's path-component).
COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")


def image_prefix() -> str:
    prefix = os.environ.get("STACKBUILD_IMAGE_PREFIX") or DEFAULT_PREFIX
    if not COMPONENT.fullmatch(prefix):
        raise InputError(
            f"STACKBUILD_IMAGE_PREFIX={prefix[:80]!r} is not one repository name component (lower-case "
            "letters and digits, joined by '.', '_', '__' or '-'): fix or unset it"
        )
    return prefix


def repository(*path: str) -> str:
    """<prefix>/<path...>: a repository of stackbuild's own images (a glob where path has one)."""
    return "/".join((image_prefix(), *path))
