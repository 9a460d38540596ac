"""Registry references stackbuild accepts where stage images go (a light module: the CLI parser imports it)."""

from __future__ import annotations

import re

REGISTRY_REPO = re.compile(r"[a-z0-9][a-z0-9.-]*(:\d{1,5})?(/[a-z0-9][a-z0-9._-]*)+")


def registry_repo(value: str) -> str:
    """REGISTRY/REPO: a registry host (and port) and a repository path, nothing else."""
    if not REGISTRY_REPO.fullmatch(value):
        raise ValueError(
            f"{value[:80]!r} is not REGISTRY/REPO (e.g. registry.internal:5000/stackbuild-cache: "
            "no scheme, tag, digest or credentials)"
        )
    return value


def registry_of(ref: str) -> str:
    """The registry host[:port] of an image reference (Docker Hub's when it names none)."""
    first, _, rest = ref.partition("/")
    return first if rest and ("." in first or ":" in first or first == "localhost") else "docker.io"
