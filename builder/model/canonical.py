"""The canonical JSON form digests are computed over: sorted keys, no whitespace, UTF-8.

Models are dumped with `exclude_defaults=True` before hashing, so adding a defaulted field
to a model changes no existing digest.
"""

from __future__ import annotations

import hashlib
import json


def canonical_json(data: object) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest(data: object) -> str:
    return hashlib.sha256(canonical_json(data)).hexdigest()
