"""The generate kind of installer package: a file a local command writes (run from the manifest's
directory, into {output_dir}), pinned by the sha256 of what it wrote when locked, made again when a
build needs it and by `lock --check`, which says when it no longer writes the same bytes."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from builder.inputs.package_kinds import v1_pinned
from builder.manifest.basemodel import Frozen, Model
from builder.manifest.types import SHA256_PATTERN, FileName, PackageRole, Script
from builder.model.plugins import Upgrades

if TYPE_CHECKING:
    from builder.inputs.package_kinds import Obtaining, Resolving
    from builder.inputs.signed import Trust
    from builder.model.say import Say

# A kind is loaded with the manifest model, by every command: what running the command and verifying
# its file need is imported where they run.


class GeneratedPackage(Model):
    """An installer file made by a local command."""

    TAG: ClassVar[str] = "generate"
    file: FileName
    generate: Script = Field(
        description="command (run from the manifest's directory) that writes the file into {output_dir}"
    )
    sha256: str | None = Field(default=None, pattern=SHA256_PATTERN)

    @property
    def command(self) -> str:
        """The command, under the name its pin gives it."""
        return self.generate


class LockedGenerated(Frozen):
    kind: Literal["generate"] = "generate"
    role: PackageRole
    file: FileName
    command: Script
    sha256: str = Field(pattern=SHA256_PATTERN)
    size: int | None = None


def _from_v1(pin: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "generate", "command": pin["generate"], **v1_pinned(pin)}


class GenerateKind:
    tag = "generate"
    hint = "'generate' (a local command)"
    spec = GeneratedPackage
    locked = LockedGenerated
    upgrades: Upgrades = MappingProxyType({1: _from_v1})

    def lock(
        self, role: PackageRole, spec: GeneratedPackage, trust: Trust, vendor: str, where: Resolving
    ) -> LockedGenerated:
        from builder.inputs import packages
        from builder.inputs.package_forms import installer

        cache = where.cache
        sha = packages.generate(spec.generate, spec.file, where.manifest_dir, cache, spec.sha256)
        installer(cache.blob(sha), spec.file, trust, cache, "fix its generate command", sha)
        size = cache.blob(sha).stat().st_size
        return LockedGenerated(role=role, file=spec.file, command=spec.generate, sha256=sha, size=size)

    def entry(self, form: GeneratedPackage | LockedGenerated) -> dict[str, object]:
        return {"command": form.command}

    def drift(self, locked: LockedGenerated, spec: GeneratedPackage, where: Obtaining) -> str | None:
        from builder.inputs import packages

        sha = packages.generate(spec.generate, spec.file, where.manifest_dir, where.cache)
        return f"generated sha256 {locked.sha256} -> {sha}" if sha != locked.sha256 else None

    def at_hand(self, locked: LockedGenerated, trust: Trust, where: Obtaining) -> None:
        return None  # made by its command, never taken from an installer directory: nothing at hand to check

    def fetch(self, locked: LockedGenerated, vendor: str, say: Say, where: Obtaining) -> str:
        from builder.inputs import packages

        return packages.generate(locked.command, locked.file, where.manifest_dir, where.cache)

    def unpinned(self, spec: GeneratedPackage) -> bool:
        return False  # what the command writes is pinned when it is locked (and made again by `lock --check`)


KIND = GenerateKind()
