"""`stackbuild diff`: what differs between two final images, field by field (commit a1b2 -> c3d4)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from builder.handoff.contents import Contents


@dataclass(frozen=True)
class Change:
    kind: str  # component, toolkit package, system package, python package, base, toolkit, host, image
    name: str
    field: str  # what of it changed ("commit", "version", ...); "" when it was added or removed
    old: str | None  # None: only in the second image
    new: str | None  # None: only in the first image

    def line(self) -> str:
        # The image's own facts and its base are one of a kind: `base: tarball_sha256 …`, not `base base: …`.
        subject = self.kind if self.name == self.kind else f"{self.kind} {self.name}"
        if self.old is None:
            return f"{subject}: only in the second image ({self.new})"
        if self.new is None:
            return f"{subject}: only in the first image ({self.old})"
        return f"{subject}: {self.field} {self.old} -> {self.new}"

    def as_json(self) -> dict[str, str | None]:
        return {"kind": self.kind, "name": self.name, "field": self.field, "old": self.old, "new": self.new}


def _flat(value: Any, prefix: str = "") -> dict[str, str]:
    """Nested entries as dotted fields (submodules.3rdparty/tvm -> commit)."""
    if isinstance(value, Mapping):
        found: dict[str, str] = {}
        for key, inner in value.items():
            found |= _flat(inner, f"{prefix}.{key}" if prefix else str(key))
        return found
    return {prefix: str(value)}


def _entries(kind: str, first: Mapping[str, Any], second: Mapping[str, Any]) -> list[Change]:
    """One change per differing field of entries present in both; added and removed entries whole."""
    changes = []
    for name in sorted(first.keys() | second.keys()):
        if name not in second:
            changes.append(Change(kind, name, "", _summary(first[name]), None))
        elif name not in first:
            changes.append(Change(kind, name, "", None, _summary(second[name])))
        else:
            old, new = _fields(first[name]), _fields(second[name])
            for field in sorted(old.keys() | new.keys()):
                if old.get(field) != new.get(field):
                    changes.append(Change(kind, name, field, old.get(field, "-"), new.get(field, "-")))
    return changes


def _fields(value: Any) -> dict[str, str]:
    return _flat(value) if isinstance(value, Mapping) else {"version": str(value)}


def _summary(value: Any) -> str:
    return " ".join(f"{k} {v}" for k, v in _flat(value).items()) if isinstance(value, Mapping) else str(value)


def compare(first: Contents, second: Contents) -> list[Change]:
    a, b = first.describe(), second.describe()
    whole = {"image": {k: a[k] for k in ("stack", "variant", "arch")}}
    changes = _entries("image", whole, {"image": {k: b[k] for k in ("stack", "variant", "arch")}})
    changes += _entries("toolkit", {"toolkit": _no_packages(a)}, {"toolkit": _no_packages(b)})
    changes += _entries("host", {"certified": a["certified_host"]}, {"certified": b["certified_host"]})
    changes += _entries("base", {"base": a["base"]}, {"base": b["base"]})
    changes += _entries("component", a["components"], b["components"])
    changes += _entries("toolkit package", a["toolkit"]["packages"], b["toolkit"]["packages"])
    changes += _entries("system package", a["system_packages"], b["system_packages"])
    changes += _entries("python package", a["python_packages"], b["python_packages"])
    return changes


def _no_packages(about: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in about["toolkit"].items() if k != "packages"}
