"""What a kind of base is (the `BaseKind` Protocol) and the one place the kinds are told apart: each
kind is a module (`image_base`, `bootstrap_base`, or a plug-in's, found through
`builder.model.plugins`) that locks its manifest form, says how a pin differs from the manifest,
names the image both base stages start FROM or gives the recipe of the root filesystem tarballs
made per architecture and flavor, and describes itself for Dockerfiles and `inspect`. Everything
else asks `kind_of(form)` and never names a kind.

Adding a kind: one module with a `KIND` object meeting `BaseKind` (its manifest model keyed by
`tag`, its locked model with `kind: Literal[tag]` and a `source_date_epoch`), named by an entry
point of the group `stackbuild.bases` in its distribution's metadata."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from pydantic import BaseModel

from builder.inputs.source_kinds import Where
from builder.model import plugins
from builder.model.arch import Arch

if TYPE_CHECKING:  # the kinds are loaded with the manifest model, by every command: kept light
    from builder.inputs.bootstrap import BaseTarball, Flavor
    from builder.model.say import Say


class TarballRecipe(Protocol):
    """How a base made here (not pulled) gives one root filesystem tarball per architecture and
    flavor, pinned in the lock's architecture sections."""

    what: str  # what makes it, for progress lines: `mmdebstrap bookworm`

    def key(self, arch: Arch, flavor: Flavor, manifest_dir: Path) -> str:
        """What the tarball is made from (the lock's `spec_key`): the same behind any site rewrite."""

    def make(self, arch: Arch, flavor: Flavor, where: Where, say: Say) -> BaseTarball:
        """The tarball made now (or found made from the same recipe), in the cache."""

    def recorded(self, arch: Arch, flavor: Flavor, where: Where) -> BaseTarball | None:
        """The tarball an earlier make recorded, if any: nothing is made."""

    def source(self, arch: Arch) -> str:
        """Where it is made from, as the manifest names it (before site rewrites)."""


class BaseKind(Protocol):
    tag: str  # the manifest's key that selects it, and the lock's `kind`
    hint: str  # how a manifest selects it, for "give exactly one of ..."
    spec: type[BaseModel]
    locked: type[BaseModel]
    # An image made elsewhere: it may bring its own Python (python_from: base) and a preinstalled
    # toolkit. A base that is not is made here from the distribution's packages alone.
    prebuilt: bool
    upgrades: plugins.Upgrades  # its pin's lock migrations (a kind newer than a version has none of it)

    def lock(self, spec: Any) -> Any:
        """The pin of the manifest's base, dated with the default SOURCE_DATE_EPOCH."""

    def differences(self, locked: Any, spec: Any) -> Iterator[str]:
        """How the pin differs from the manifest's base: `base.FIELD: the lock has ..., the manifest ...`."""

    def pinned_image(self, form: Any) -> str | None:
        """The image both base stages start FROM, of the manifest's base or its pin (None: made here)."""

    def recipe(self, spec: Any) -> TarballRecipe | None:
        """How the tarballs of a base made here are made (None: it is pulled)."""

    def origin(self, locked: Any) -> str:
        """Where the root filesystem comes from, for the base Dockerfile's first line."""

    def fields(self, locked: Any) -> dict[str, str]:
        """`inspect`'s entry for the base (its date and tarballs are added by the caller)."""


def kinds() -> dict[str, BaseKind]:
    return cast(dict[str, BaseKind], plugins.loaded(plugins.BASES))


def kind_of(form: object) -> BaseKind:
    """The kind of the manifest's base or of its pin."""
    return cast(BaseKind, plugins.kind_of(plugins.BASES, form))


def made_by_recipe(recipe: TarballRecipe, arch: Arch, flavor: Flavor, where: Where, say: Say) -> BaseTarball:
    """A base tarball as its recipe makes it: how a Resolver makes bases unless a test says otherwise."""
    return recipe.make(arch, flavor, where, say)
