"""Ordering CANN and driver versions."""

from __future__ import annotations

import re


def version_key(version: str) -> tuple[int, ...]:
    """Order CANN/HDK versions: 25.3.rc1 < 25.3.0 < 25.3.1 (an RC precedes its release)."""
    parts: list[int] = []
    for part in version.lower().split("."):
        if match := re.fullmatch(r"rc(\d+)", part):
            parts += [-1, int(match.group(1))]
        elif part.isdigit():
            parts += [int(part), 0]
        else:
            parts += [-2, 0]
    return tuple(parts)
