"""Small JSON records under the cache's records/<kind>/ (base bootstraps, last builds, smoke passes,
remembered layer rewrites): written atomically, and one missing or unreadable is read as never
written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from builder.store.files import write_atomic


class RecordStore:
    """The records under root (the cache's records/), by kind and a name below it ("stack/arch/name")."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, kind: str, *names: str) -> Path:
        return self.root.joinpath(kind, *names[:-1], f"{names[-1]}.json")

    def read(self, kind: str, *names: str) -> dict[str, Any] | None:
        """A record written by write, or None (missing or unreadable: treated as never written)."""
        try:
            data = json.loads(self._path(kind, *names).read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def write(self, data: dict[str, Any], kind: str, *names: str) -> None:
        write_atomic(self._path(kind, *names), json.dumps(data, indent=1, sort_keys=True))

    def every(self, kind: str) -> dict[str, dict[str, Any]]:
        """Every readable record of a kind, by its name below the kind ("stack/arch/name")."""
        root = self.root / kind
        found = {}
        for path in sorted(root.rglob("*.json")):
            if (data := self.read(kind, *path.relative_to(root).with_suffix("").parts)) is not None:
                found[path.relative_to(root).with_suffix("").as_posix()] = data
        return found

    def remove(self, kind: str, name: str) -> None:
        self._path(kind, *name.split("/")).unlink(missing_ok=True)
