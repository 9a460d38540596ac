"""The canonical JSON form digests are computed over: sorted keys, no whitespace, UTF-8.

Models are dumped with `exclude_defaults=True` before hashing, so adding a defaulted field
to a model changes no existing digest.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import ModuleType


def canonical_json(data: object) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest(data: object) -> str:
    return hashlib.sha256(canonical_json(data)).hexdigest()


def code_digest(*modules: ModuleType) -> str:
    """sha256 over the source files of modules: what a result remembered in the cache was made by
    (a change to that code forgets it)."""
    return hashlib.sha256(b"".join(Path(str(module.__file__)).read_bytes() for module in modules)).hexdigest()
