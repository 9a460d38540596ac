"""The bootstrap kind of base: root filesystems made here with mmdebstrap from a Debian or Ubuntu
mirror, one tarball per architecture and flavor (builder.inputs.bootstrap makes them bit for bit)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from builder.inputs.source_kinds import Where
from builder.manifest.basemodel import Frozen, Model
from builder.manifest.bases import Bootstrap
from builder.manifest.types import SOURCE_DATE_EPOCH, Epoch, MirrorUrl, Suite
from builder.model.arch import Arch
from builder.model.plugins import Upgrades

if TYPE_CHECKING:
    from builder.inputs.bootstrap import BaseTarball, Flavor
    from builder.model.say import Say

# A kind is loaded with the manifest model, by every command: mmdebstrap's module (and the HTTP
# client it imports) is imported where a tarball is made.


class BootstrapBase(Model):
    TAG: ClassVar[str] = "bootstrap"
    bootstrap: Bootstrap


class LockedBootstrapBase(Frozen):
    kind: Literal["bootstrap"] = "bootstrap"
    suite: Suite
    mirror: MirrorUrl
    variant: Literal["apt", "minbase", "required", "important", "standard"]
    source_date_epoch: Epoch


@dataclass(frozen=True)
class MmdebstrapRecipe:
    spec: Bootstrap

    @property
    def what(self) -> str:
        return f"mmdebstrap {self.spec.suite}"

    def key(self, arch: Arch, flavor: Flavor, manifest_dir: Path) -> str:
        from builder.inputs import bootstrap

        return bootstrap.spec_key(self.spec, arch, flavor, bootstrap.keyring(self.spec, manifest_dir))

    def make(self, arch: Arch, flavor: Flavor, where: Where, say: Say) -> BaseTarball:
        from builder.inputs import bootstrap

        keys = bootstrap.keyring(self.spec, where.manifest_dir)
        mirror = where.site.rewrite(self.spec.mirror_for(arch))
        return bootstrap.bootstrap(self.spec, arch, flavor, keys, where.cache, mirror, say)

    def recorded(self, arch: Arch, flavor: Flavor, where: Where) -> BaseTarball | None:
        from builder.inputs import bootstrap

        keys = bootstrap.keyring(self.spec, where.manifest_dir)
        mirror = where.site.rewrite(self.spec.mirror_for(arch))
        return bootstrap.recorded(self.spec, arch, flavor, keys, where.cache, mirror)

    def source(self, arch: Arch) -> str:
        return self.spec.mirror_for(arch)


def _from_v1(pin: dict[str, Any]) -> dict[str, Any]:
    """Lock version 1 wrote every field of both kinds, unused ones null."""
    return {"kind": "bootstrap", **{k: pin[k] for k in ("suite", "mirror", "variant", "source_date_epoch")}}


class BootstrapKind:
    tag = "bootstrap"
    hint = "'bootstrap'"
    spec = BootstrapBase
    locked = LockedBootstrapBase
    upgrades: Upgrades = MappingProxyType({1: _from_v1})
    prebuilt = False

    def lock(self, spec: BootstrapBase) -> LockedBootstrapBase:
        boot = spec.bootstrap
        return LockedBootstrapBase(
            suite=boot.suite, mirror=boot.mirror, variant=boot.variant, source_date_epoch=SOURCE_DATE_EPOCH
        )

    def differences(self, locked: LockedBootstrapBase, spec: BootstrapBase) -> Iterator[str]:
        for name in ("suite", "mirror", "variant"):
            if (had := getattr(locked, name)) != (wanted := getattr(spec.bootstrap, name)):
                yield f"base.{name}: the lock has {had!r}, the manifest {wanted!r}"

    def pinned_image(self, form: BootstrapBase | LockedBootstrapBase) -> None:
        return None

    def recipe(self, spec: BootstrapBase) -> MmdebstrapRecipe:
        return MmdebstrapRecipe(spec.bootstrap)

    def origin(self, locked: LockedBootstrapBase) -> str:
        return f"bootstrapped with mmdebstrap ({locked.suite}, {locked.variant})"

    def fields(self, locked: LockedBootstrapBase) -> dict[str, str]:
        return {"bootstrap": f"{locked.suite} ({locked.variant}) from {locked.mirror}"}


KIND = BootstrapKind()
