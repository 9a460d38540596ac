"""What a kind of toolkit installer package is (the `PackageKind` Protocol) and the one place the
kinds are told apart: each kind is a module (`download_package`, a file at a URL; `generated_package`,
a file a local command writes; or a plug-in's, found through `builder.model.plugins`) that pins its
manifest entry, names the fields a pin must still agree with the manifest on, makes its file again
for `lock --check`, checks a copy at hand before a build's slow work, and brings its file into the
cache when a stage's context is written. Everything else asks `kind_of(form)` and never names a
kind. The form a package file is shipped in (a signed catalog zip, a bare `.run`) is another
question, whatever the kind: `builder.inputs.package_forms` answers it.

Adding a kind: one module with a `KIND` object meeting `PackageKind` (its manifest model keyed by
its `TAG`, with `file` and `sha256`; its locked model with `kind: Literal[tag]` and the fields of
`Pinned`), named by an entry point of the group `stackbuild.packages` in its distribution's
metadata."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from pydantic import BaseModel

from builder.manifest.basemodel import Model
from builder.model import plugins

if TYPE_CHECKING:  # the kinds are loaded with the manifest model, by every command: kept light
    from builder.inputs.signed import Trust
    from builder.inputs.site import SiteConfig
    from builder.manifest.types import PackageRole
    from builder.model.say import Say
    from builder.store.cache import Cache
    from builder.store.http import HttpClient


class Obtaining(Protocol):
    """Where a package's file is made or found, and kept: a lock's Resolver, a build's Request."""

    @property
    def manifest_dir(self) -> Path: ...
    @property
    def site(self) -> SiteConfig: ...
    @property
    def cache(self) -> Cache: ...


class Resolving(Obtaining, Protocol):
    """What pinning a package needs besides (a lock's Resolver): the network, and where to say what it does."""

    @property
    def client(self) -> HttpClient: ...
    @property
    def say(self) -> Say: ...


class Pinned(Protocol):
    """What the pin of every kind has: the build, bundles, `inspect` and the SBOM read these alone."""

    @property
    def kind(self) -> str: ...
    @property
    def role(self) -> PackageRole: ...
    @property
    def file(self) -> str: ...
    @property
    def sha256(self) -> str: ...
    @property
    def size(self) -> int | None: ...


class PackageKind(Protocol):
    tag: str  # the lock's `kind` (the manifest selects it by its spec's TAG)
    hint: str  # how a manifest selects it, for "give exactly one of ..."
    spec: type[Model]
    locked: type[BaseModel]
    upgrades: plugins.Upgrades  # its pin's lock migrations (a kind newer than a version has none of it)

    def lock(self, role: PackageRole, spec: Any, trust: Trust, vendor: str, where: Resolving) -> Any:
        """The pin of a manifest entry, its file in the cache checked to be what its name says
        (trust: the roots a signed one chains to; vendor: whose downloader's headers to send)."""

    def entry(self, form: Any) -> dict[str, object]:
        """The fields besides file and sha256 a pin is made from, of a manifest entry or of its pin
        (the same keys): where they differ, the lock is not the manifest's."""

    def drift(self, locked: Any, spec: Any, where: Obtaining) -> str | None:
        """How the file made again now differs from the pin, for `lock --check` (None: it does not,
        or a kind whose file is not made again to tell)."""

    def at_hand(self, locked: Any, trust: Trust, where: Obtaining) -> None:
        """A copy of the pinned file at hand (in an installer directory) checked to be what its name
        says, before a build's slow work: a wrong one is refused there, not after an hour."""

    def fetch(self, locked: Any, vendor: str, say: Say, where: Obtaining) -> str:
        """The pinned file brought into the cache when a stage's context is written; the sha256 it has."""

    def unpinned(self, spec: Any) -> bool:
        """Whether the lock pins a manifest entry with whatever its first download gives (`validate` warns)."""


def kinds() -> dict[str, PackageKind]:
    return cast(dict[str, PackageKind], plugins.loaded(plugins.PACKAGES))


def kind_of(form: object) -> PackageKind:
    """The kind of a manifest entry or of a pin."""
    return cast(PackageKind, plugins.kind_of(plugins.PACKAGES, form))


def v1_pinned(pin: dict[str, Any]) -> dict[str, Any]:
    """What every package pin of lock version 1 has, as version 2 names it: v1 named the role `kind`
    and wrote every field of both kinds, unused ones null."""
    return {"role": pin["kind"], "file": pin["file"], "sha256": pin["sha256"], "size": pin["size"]}
