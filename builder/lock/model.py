"""The lock model (lock_version 2): everything a build reads, resolved and pinned.

One section per architecture (its packages and its bootstrapped base tarballs), so
refreshing one architecture never drops another's pins. Sources, bases and packages are
tagged unions (`kind`). The lock's own digest is over its canonical JSON (sorted keys,
defaults left out), so adding a defaulted field changes no existing digest.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from builder.inputs.bootstrap import Flavor
from builder.manifest.model import PackageRole
from builder.model.arch import Arch
from builder.model.canonical import digest
from builder.model.errors import StackbuildError

LOCK_VERSION: Literal[2] = 2
SHA256 = r"^[0-9a-f]{64}$"
COMMIT = r"^[0-9a-f]{40}$"


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LockedGit(Frozen):
    kind: Literal["git"] = "git"
    url: str
    ref: str
    commit: str = Field(pattern=COMMIT)

    def describe(self) -> str:
        return f"git {self.ref} {self.commit}"


class LockedPath(Frozen):
    kind: Literal["path"] = "path"
    path: str
    tree_sha256: str = Field(pattern=SHA256)

    def describe(self) -> str:
        return f"source tree {self.tree_sha256}"


LockedSource = Annotated[Union[LockedGit, LockedPath], Field(discriminator="kind")]  # noqa: UP007


class LockedComponent(Frozen):
    id: str
    depends_on: list[str] = Field(default_factory=list)
    source: LockedSource


class LockedDownload(Frozen):
    kind: Literal["download"] = "download"
    role: PackageRole
    file: str
    url: str
    sha256: str = Field(pattern=SHA256)
    size: int | None = None


class LockedGenerated(Frozen):
    kind: Literal["generate"] = "generate"
    role: PackageRole
    file: str
    command: str
    sha256: str = Field(pattern=SHA256)
    size: int | None = None


LockedPackage = Annotated[Union[LockedDownload, LockedGenerated], Field(discriminator="kind")]  # noqa: UP007


class LockedTarball(Frozen):
    sha256: str = Field(pattern=SHA256)
    packages: dict[str, str]
    # The bootstrap spec it was made from (inputs.bootstrap.spec_key): kept across relocks while it matches.
    spec_key: str | None = None


class ArchSection(Frozen):
    packages: list[LockedPackage]
    base: dict[Flavor, LockedTarball] = Field(default_factory=dict)

    def package(self, role: PackageRole) -> LockedDownload | LockedGenerated | None:
        return next((p for p in self.packages if p.role == role), None)


class LockedImageBase(Frozen):
    kind: Literal["image"] = "image"
    image: str


class LockedBootstrapBase(Frozen):
    kind: Literal["bootstrap"] = "bootstrap"
    suite: str
    mirror: str
    variant: str
    source_date_epoch: int


LockedBase = Annotated[Union[LockedImageBase, LockedBootstrapBase], Field(discriminator="kind")]  # noqa: UP007


class LockedToolkit(Frozen):
    vendor: str
    version: str
    chip: str


class Lock(Frozen):
    lock_version: Literal[2]
    stack: str
    manifest_sha256: str
    toolkit: LockedToolkit
    base: LockedBase
    components: list[LockedComponent]
    order: list[str]
    architectures: dict[Arch, ArchSection]
    lock_sha256: str = ""

    def content_sha256(self) -> str:
        return digest(self.model_dump(mode="json", exclude={"lock_sha256"}, exclude_defaults=True))

    def sealed(self) -> Lock:
        return self.model_copy(update={"lock_sha256": self.content_sha256()})

    def component(self, component_id: str) -> LockedComponent:
        return next(c for c in self.components if c.id == component_id)

    def section(self, arch: Arch) -> ArchSection:
        if arch not in self.architectures:
            raise StackbuildError(f"the lock of {self.stack} has no {arch} section: run `stackbuild lock {self.stack}`")
        return self.architectures[arch]

    def tarball(self, arch: Arch, flavor: Flavor) -> LockedTarball:
        tarball = self.section(arch).base.get(flavor)
        if tarball is None:
            raise StackbuildError(
                f"the lock of {self.stack} has no {arch} base: run `stackbuild lock {self.stack} --arch {arch}`"
            )
        return tarball
