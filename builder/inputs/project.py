"""Where a stack's definition comes from: the git checkout holding its manifest (origin URL and
commit), for the build's provenance; never in an image, whose bytes only the lock decides."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from builder.store.http import redact


@dataclass(frozen=True)
class Origin:
    source: str | None = None  # the checkout's origin URL, credentials and query left out
    revision: str | None = None  # its HEAD commit


def origin_of(directory: Path) -> Origin:
    """The checkout directory is in, or an empty Origin when it is in none (or git is missing)."""
    return Origin(_git(directory, "remote", "get-url", "origin"), _git(directory, "rev-parse", "HEAD"))


def _git(directory: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(directory), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = done.stdout.strip()
    if done.returncode != 0 or not value:
        return None
    return redact(value) if "://" in value else value
