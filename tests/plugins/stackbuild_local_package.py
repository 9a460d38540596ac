"""A kind of toolkit package that stackbuild does not have, for the tests that add one: an installer
kept beside the manifest, pinned by its sha256 and taken from there again when a build needs it.
One module meeting builder.inputs.package_kinds.PackageKind, found as any plug-in is: through an
entry point of the group `stackbuild.packages` (tests/unit/inputs/test_package_plugins.py writes the
distribution metadata that names it)."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from builder.inputs.package_forms import installer
from builder.manifest.basemodel import Frozen, Model
from builder.manifest.types import SHA256_PATTERN, FileName, PackageRole, RelativePath
from builder.model.plugins import Upgrades
from builder.store.files import sha256_file

if TYPE_CHECKING:  # loaded while the manifest's toolkit model is made: what imports it comes later
    from builder.inputs.package_kinds import Obtaining, Resolving
    from builder.inputs.signed import Trust
    from builder.model.say import Say


class LocalPackage(Model):
    TAG: ClassVar[str] = "local"
    file: FileName
    local: RelativePath = Field(description="the installer, relative to the manifest")
    sha256: str | None = Field(default=None, pattern=SHA256_PATTERN)

    @property
    def path(self) -> str:
        return self.local


class LockedLocal(Frozen):
    kind: Literal["local"] = "local"
    role: PackageRole
    file: FileName
    path: RelativePath
    sha256: str = Field(pattern=SHA256_PATTERN)
    size: int | None = None


class LocalKind:
    tag = "local"
    hint = "'local'"
    spec = LocalPackage
    locked = LockedLocal
    upgrades: Upgrades = MappingProxyType({})  # new since lock version 2: nothing to upgrade

    def lock(self, role: PackageRole, spec: LocalPackage, trust: Trust, vendor: str, where: Resolving) -> LockedLocal:
        source = where.manifest_dir / spec.local
        sha = where.cache.add_file(source, spec.sha256)
        installer(where.cache.blob(sha), spec.file, trust, where.cache, "fix the file", sha)
        return LockedLocal(role=role, file=spec.file, path=spec.local, sha256=sha, size=source.stat().st_size)

    def entry(self, form: LocalPackage | LockedLocal) -> dict[str, object]:
        return {"path": form.path}

    def drift(self, locked: LockedLocal, spec: LocalPackage, where: Obtaining) -> str | None:
        now = sha256_file(where.manifest_dir / spec.local)
        return f"{spec.local} now has sha256 {now}" if now != locked.sha256 else None

    def at_hand(self, locked: LockedLocal, trust: Trust, where: Obtaining) -> None:
        return None

    def fetch(self, locked: LockedLocal, vendor: str, say: Say, where: Obtaining) -> str:
        return where.cache.add_file(where.manifest_dir / locked.path)

    def unpinned(self, spec: LocalPackage) -> bool:
        return False


KIND = LocalKind()
