"""The path kind of component source: a directory beside the manifest (inside the repository that
holds it), pinned by the content hash of its tree and placed into a stage's context as it is; a
working tree that moved since the lock is built as it is, and says so."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from builder.inputs.source_kinds import Carried, Described, Placed, Where
from builder.manifest.basemodel import Frozen, Model
from builder.manifest.types import SHA256_PATTERN, Line
from builder.model.plugins import Upgrades

if TYPE_CHECKING:
    from builder.inputs.site import SiteConfig

# A kind is loaded with the manifest model, by every command: what hashing and placing a tree need
# is imported where they run.


class PathSource(Model):
    TAG: ClassVar[str] = "path"
    path: Line = Field(description="directory, relative to the manifest (inside its repository)")


class LockedPath(Frozen):
    kind: Literal["path"] = "path"
    path: Line
    tree_sha256: str = Field(pattern=SHA256_PATTERN)


def _from_v1(pin: dict[str, Any]) -> dict[str, Any]:
    """Lock version 1 wrote every field of every kind, unused ones null."""
    return {"kind": "path", "path": pin["path"], "tree_sha256": pin["tree_sha256"]}


class PathKind:
    tag = "path"
    hint = "'path'"
    spec = PathSource
    locked = LockedPath
    upgrades: Upgrades = MappingProxyType({1: _from_v1})

    def lock(self, spec: PathSource, where: Where) -> LockedPath:
        from builder.inputs import trees

        return LockedPath(path=spec.path, tree_sha256=trees.tree_hash(where.manifest_dir / spec.path))

    def entry(self, form: PathSource | LockedPath) -> dict[str, object]:
        return {"path": form.path}

    def upstream(self, locked: LockedPath, where: Where) -> None:
        return None  # a tree is hashed again on every lock

    def drift(self, old: LockedPath, new: LockedPath) -> str | None:
        return f"source tree {old.tree_sha256} -> {new.tree_sha256}" if old.tree_sha256 != new.tree_sha256 else None

    def place(self, locked: LockedPath, spec: PathSource, where: Where) -> Placed:
        from builder.inputs import trees
        from builder.inputs.contexts import LocalTree

        root = where.manifest_dir / locked.path
        now = trees.tree_hash(root)
        pinned = locked.tree_sha256
        drift = f"source tree {pinned[:12]} (locked) -> {now[:12]} (working tree)" if now != pinned else None
        return Placed((LocalTree("src/", root, now),), "source tree", now, drift)

    def built_from(self, locked: LockedPath, content: str) -> LockedPath:
        return locked if content == locked.tree_sha256 else locked.model_copy(update={"tree_sha256": content})

    def describe(self, locked: LockedPath) -> Described:
        return Described(
            pin=f"source tree {locked.tree_sha256}",
            reference=f"tree {locked.tree_sha256}",
            version=locked.tree_sha256,
            fields={"path": locked.path, "tree_sha256": locked.tree_sha256},
            properties={"stackbuild:path": locked.path},
        )

    def carried(self, locked: LockedPath, site: SiteConfig) -> list[Carried]:
        return []  # the tree is in the checkout a bundle is made from

    def problem(self, spec: PathSource, manifest_dir: Path) -> tuple[str, str] | None:
        if Path(spec.path).is_absolute():
            return "path", f"{spec.path} is absolute: path sources are relative to the manifest"
        boundary = source_boundary(manifest_dir)
        target = (manifest_dir / spec.path).resolve()
        if not target.is_relative_to(boundary):
            return "path", (
                f"{spec.path} leads outside {boundary} (the repository holding the manifest): path sources stay "
                "inside it"
            )
        if not target.is_dir():
            return "path", f"directory {spec.path} does not exist (paths are relative to the manifest)"
        return None

    def origin(self, spec: PathSource) -> None:
        return None


def source_boundary(manifest_dir: Path) -> Path:
    """What path sources must stay inside: the repository holding the manifest (so monorepo
    layouts like ../src/x work), or the manifest's directory outside a repository."""
    here = manifest_dir.resolve()
    return next((d for d in (here, *here.parents) if (d / ".git").exists()), here)


KIND = PathKind()
