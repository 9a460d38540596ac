"""A kind of base that stackbuild does not have, for the test that adds one: root filesystem
tarballs a vendor publishes, one per architecture and flavor at a URL with `{arch}` and `{flavor}`
in it, made here by downloading them (pinned by sha256 in the lock's architecture sections, as
bootstrapped ones are). One module meeting builder.inputs.base_kinds.BaseKind, found as any plug-in
is: through an entry point of the group `stackbuild.bases` (tests/unit/inputs/test_base_plugins.py writes
the distribution metadata that names it)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar, Literal

from pydantic import Field

from builder.inputs import bootstrap
from builder.inputs.bootstrap import BaseTarball, Flavor
from builder.inputs.source_kinds import Where
from builder.manifest.basemodel import Frozen, Model
from builder.manifest.types import SOURCE_DATE_EPOCH, Epoch, Line
from builder.model.arch import Arch
from builder.model.canonical import digest
from builder.model.plugins import Upgrades
from builder.model.say import Say
from builder.store.http import HttpClient, SizeLimit

URL_PATTERN = r"^https?://\S*\{arch\}\S*\{flavor\}\S*$"


class RootfsBase(Model):
    TAG: ClassVar[str] = "rootfs"
    rootfs: Line = Field(pattern=URL_PATTERN, description="a root filesystem tarball's URL, with {arch} and {flavor}")


class LockedRootfs(Frozen):
    kind: Literal["rootfs"] = "rootfs"
    url: Line = Field(pattern=URL_PATTERN)
    source_date_epoch: Epoch


@dataclass(frozen=True)
class Download:
    url: str

    @property
    def what(self) -> str:
        return f"download {self.url}"

    def source(self, arch: Arch) -> str:
        return self.url.replace("{arch}", arch.value)

    def key(self, arch: Arch, flavor: Flavor, manifest_dir: Path) -> str:
        return digest({"url": self.source(arch).replace("{flavor}", flavor)})

    def make(self, arch: Arch, flavor: Flavor, where: Where, say: Say) -> BaseTarball:
        url = where.site.rewrite(self.source(arch).replace("{flavor}", flavor))
        limit = SizeLimit.of(None, int(where.site.download_limit))
        sha = HttpClient().download(url, where.cache, limit=limit)
        return BaseTarball(sha, bootstrap.dpkg_versions(where.cache.blob(sha)))

    def recorded(self, arch: Arch, flavor: Flavor, where: Where) -> None:
        return None  # nothing is recorded: a tarball not in the cache is downloaded again


class RootfsKind:
    tag = "rootfs"
    hint = "'rootfs'"
    spec = RootfsBase
    locked = LockedRootfs
    upgrades: Upgrades = MappingProxyType({})  # new since lock version 2: nothing to upgrade
    prebuilt = False

    def lock(self, spec: RootfsBase) -> LockedRootfs:
        return LockedRootfs(url=spec.rootfs, source_date_epoch=SOURCE_DATE_EPOCH)

    def differences(self, locked: LockedRootfs, spec: RootfsBase) -> Iterator[str]:
        if locked.url != spec.rootfs:
            yield f"base.rootfs: the lock has {locked.url!r}, the manifest {spec.rootfs!r}"

    def pinned_image(self, form: RootfsBase | LockedRootfs) -> None:
        return None

    def recipe(self, spec: RootfsBase) -> Download:
        return Download(spec.rootfs)

    def origin(self, locked: LockedRootfs) -> str:
        return f"downloaded from {locked.url}"

    def fields(self, locked: LockedRootfs) -> dict[str, str]:
        return {"rootfs": locked.url}


KIND = RootfsKind()
