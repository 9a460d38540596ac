"""The image kind of base: an image pinned by digest (an official CANN image, a distribution's),
pulled as it is; both base stages start FROM it, and it may bring its own Python and toolkit."""

from __future__ import annotations

from collections.abc import Iterator
from types import MappingProxyType
from typing import Any, ClassVar, Literal

from pydantic import Field

from builder.manifest.basemodel import Frozen, Model
from builder.manifest.types import IMAGE_PATTERN, SOURCE_DATE_EPOCH, Epoch, Line
from builder.model.plugins import Upgrades


class ImageBase(Model):
    TAG: ClassVar[str] = "image"
    image: Line = Field(pattern=IMAGE_PATTERN, description="image reference pinned by digest")


class LockedImageBase(Frozen):
    kind: Literal["image"] = "image"
    image: Line = Field(pattern=IMAGE_PATTERN)
    # What the stages built on the pinned image are dated and normalised to (its own layers stay as
    # pulled). The default is the bootstrap's date, so a lock written before it existed reads the same.
    source_date_epoch: Epoch = SOURCE_DATE_EPOCH


def _from_v1(pin: dict[str, Any]) -> dict[str, Any]:
    """Lock version 1 wrote every field of both kinds (a date too, which an image base then ignored)."""
    return {"kind": "image", "image": pin["image"]}


class ImageKind:
    tag = "image"
    hint = "'image' (pinned by digest)"
    spec = ImageBase
    locked = LockedImageBase
    upgrades: Upgrades = MappingProxyType({1: _from_v1})
    prebuilt = True

    def lock(self, spec: ImageBase) -> LockedImageBase:
        return LockedImageBase(image=spec.image, source_date_epoch=SOURCE_DATE_EPOCH)

    def differences(self, locked: LockedImageBase, spec: ImageBase) -> Iterator[str]:
        if locked.image != spec.image:
            yield f"base.image: the lock has {locked.image!r}, the manifest {spec.image!r}"

    def pinned_image(self, form: ImageBase | LockedImageBase) -> str:
        return form.image

    def recipe(self, spec: ImageBase) -> None:
        return None

    def origin(self, locked: LockedImageBase) -> str:
        return f"pulled as {locked.image}"

    def fields(self, locked: LockedImageBase) -> dict[str, str]:
        return {"image": locked.image}


KIND = ImageKind()
