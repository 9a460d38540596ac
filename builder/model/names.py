"""Image names: every repository stackbuild names on an engine (stage images, finals, the states gc
and `shell` keep) starts with one prefix, the settings' image_prefix ($STACKBUILD_IMAGE_PREFIX, default
`stackbuild`), so another user of the same engine (the test suite) keeps to names of its own."""

from __future__ import annotations

import re

DEFAULT_PREFIX = "stackbuild"
# One component of a Docker repository name (the distribution spec's path-component).
COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")


def repository(image_prefix: str, *path: str) -> str:
    """<prefix>/<path...>: a repository of stackbuild's own images (a glob where path has one)."""
    return "/".join((image_prefix, *path))
