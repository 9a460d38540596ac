"""The lock model (lock_version 2): everything a build reads, resolved and pinned.

One section per architecture (its packages and its bootstrapped base tarballs), so
refreshing one architecture never drops another's pins. Sources, bases and packages are
tagged unions (`kind`). The lock's own digest is over its canonical JSON (sorted keys,
defaults left out), so adding a defaulted field changes no existing digest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, Union
from urllib.parse import urlsplit

from pydantic import Field, SerializerFunctionWrapHandler, field_validator, model_serializer

from builder.inputs.bootstrap import Flavor
from builder.inputs.debs import DEB_FILE
from builder.manifest.basemodel import Frozen
from builder.manifest.types import (
    CHIP_PATTERN,
    ID_PATTERN,
    NAME_PATTERN,
    VERSION_PATTERN,
    CopyPath,
    DownloadUrl,
    FileName,
    Line,
    MirrorUrl,
    PackageRole,
    PythonIndex,
    RelativePath,
    relative_path,
)
from builder.model import plugins
from builder.model.arch import Arch
from builder.model.canonical import digest
from builder.model.errors import StackbuildError

if TYPE_CHECKING:
    from typing_extensions import Self

    from builder.inputs.package_kinds import Pinned

LOCK_VERSION: Literal[2] = 2
SHA256 = r"^[0-9a-f]{64}$"


# The pins of the kinds of source (builder.inputs.source_kinds), told apart by `kind`.
_SOURCE_KINDS = plugins.loaded(plugins.SOURCES).values()
if TYPE_CHECKING:
    LockedSource = Frozen
else:
    LockedSource = Annotated[Union[tuple(kind.locked for kind in _SOURCE_KINDS)], Field(discriminator="kind")]  # noqa: UP007

# The pins of the kinds of installer package (builder.inputs.package_kinds), told apart by `kind`.
_PACKAGE_KINDS = plugins.loaded(plugins.PACKAGES).values()
if TYPE_CHECKING:
    LockedPackage = Pinned
else:
    LockedPackage = Annotated[Union[tuple(kind.locked for kind in _PACKAGE_KINDS)], Field(discriminator="kind")]  # noqa: UP007


class LockedFetch(Frozen):
    """A file the component's build needs (the manifest's fetch:), pinned."""

    url: DownloadUrl
    to: CopyPath
    sha256: str = Field(pattern=SHA256)
    size: int | None = None  # None: pinned by the manifest while its host gave no answer (fetched at build time)

    @field_validator("to")
    @classmethod
    def inside(cls, value: str) -> str:
        return relative_path(value)


class LockedComponent(Frozen):
    id: str = Field(pattern=ID_PATTERN)
    depends_on: list[Line] = Field(default_factory=list)
    source: LockedSource
    network: bool = False  # the build reaches the network: what it downloads is not pinned here
    fetched: list[LockedFetch] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _without_empty_fetch(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """No `fetched: []` in the lock file: locks made before fetch: existed read and write the same."""
        data: dict[str, Any] = handler(self)
        if not self.fetched:
            data.pop("fetched", None)
        return data


class LockedTarball(Frozen):
    sha256: str = Field(pattern=SHA256)
    packages: dict[Line, Line]
    # The bootstrap spec it was made from (inputs.bootstrap.spec_key): kept across relocks while it matches.
    spec_key: str | None = Field(default=None, pattern=SHA256)


class LockedDeb(Frozen):
    # Debian's own shapes (Policy 5.6.1, 5.6.12): each reaches the install script as one word.
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9+.-]+$")
    version: str = Field(pattern=r"^[0-9A-Za-z.+~:-]+$")
    architecture: str = Field(pattern=r"^[a-z0-9-]+$")
    repository: MirrorUrl
    path: RelativePath = Field(description="pool path below the repository")
    sha256: str = Field(pattern=SHA256)
    size: int

    @field_validator("path")
    @classmethod
    def deb_file(cls, value: str) -> str:
        if not re.match(DEB_FILE, value.rsplit("/", 1)[-1]):
            raise ValueError(f"not a .deb file name: {value[:120]!r}")
        return value

    @property
    def file(self) -> str:
        return self.path.rsplit("/", 1)[-1]


class LockedSystem(Frozen):
    """The .debs of the system packages, each scope's closure in install order: the stack's (installed
    into the devel base) and the runtime base's, and per component what it needs beyond the stack's
    (with its dependencies')."""

    stack: list[LockedDeb] = Field(default_factory=list)
    runtime: list[LockedDeb] = Field(default_factory=list)
    components: dict[Line, list[LockedDeb]] = Field(default_factory=dict)
    # The compiler cache's closure beyond the stack's: never installed, unpacked into the tool image
    # component builds mount (builder.execute.compile_mounts).
    compile_cache: list[LockedDeb] = Field(default_factory=list)
    # What it was resolved from (requests, repositories, base): kept across relocks of other architectures.
    spec_key: str | None = Field(default=None, pattern=SHA256)

    @model_serializer(mode="wrap")
    def _without_compile_cache(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """No `compile_cache` without one: the locks of stacks that name none read and write as before."""
        data: dict[str, Any] = handler(self)
        if not self.compile_cache:
            data.pop("compile_cache", None)
        return data

    def devel(self) -> list[LockedDeb]:
        """Every component's .debs, once each, for the devel image."""
        seen: dict[str, LockedDeb] = {}
        for debs in self.components.values():
            for deb in debs:
                seen.setdefault(deb.sha256, deb)
        return list(seen.values())


class LockedWheel(Frozen):
    # Names and versions go into a requirements file: a project name and a PEP 440 version, never an option.
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    version: str = Field(pattern=r"^[0-9][0-9A-Za-z.!+_-]*$")
    file: FileName
    sha256: str = Field(pattern=SHA256)
    index: PythonIndex = ""  # of several python_index entries, the one the project came from

    @model_serializer(mode="wrap")
    def _without_single_index(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """No `index` with a single index: locks made before several were possible read and write the same."""
        data: dict[str, Any] = handler(self)
        if not self.index:
            data.pop("index", None)
        return data


class ArchSection(Frozen):
    packages: list[LockedPackage]
    base: dict[Flavor, LockedTarball] = Field(default_factory=dict)
    system: LockedSystem = Field(default_factory=LockedSystem)
    # Per component: the wheels its python_packages resolve to (dependencies included) on this architecture,
    # and what they were resolved from (requirements, index, target): kept by relocks that do not ask for them.
    python: dict[Line, list[LockedWheel]] = Field(default_factory=dict)
    python_keys: dict[Line, str] = Field(default_factory=dict)

    def package(self, role: PackageRole) -> LockedPackage | None:
        return next((p for p in self.packages if p.role == role), None)


# The pins of the kinds of base (builder.inputs.base_kinds), told apart by `kind`.
_BASE_KINDS = plugins.loaded(plugins.BASES).values()
if TYPE_CHECKING:

    class LockedBase(Protocol):
        """What every kind's pin has: the lock reads its date; the rest is the kind's (kind_of)."""

        @property
        def kind(self) -> str: ...
        @property
        def source_date_epoch(self) -> int: ...
        def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self: ...

else:
    LockedBase = Annotated[Union[tuple(kind.locked for kind in _BASE_KINDS)], Field(discriminator="kind")]  # noqa: UP007


class LockedToolkit(Frozen):
    vendor: Literal["huawei", "cpusim"]
    version: str = Field(pattern=VERSION_PATTERN)
    chip: str = Field(pattern=CHIP_PATTERN)


UnresolvedKind = Literal["base", "system", "python", "fetch"]


class Unresolved(Frozen):
    """A part of the lock no source answered for when it was made (an outage, or a host this machine
    does not reach: a site points it at a mirror). Recorded instead of a pin, never guessed: a build
    of it refuses, `lock --check` skips it and says so, the next lock tries again."""

    kind: UnresolvedKind
    arch: Arch | None = None  # None: every architecture (a component's fetch: entry)
    component: Line = ""  # python, fetch
    path: Line = ""  # fetch: where in the context
    url: Line  # the source as the manifest names it (before site rewrites), redacted
    reason: Line

    def what(self) -> str:
        match self.kind:
            case "base":
                return f"{self.arch} base (and its system packages)"
            case "system":
                return f"{self.arch} system packages"
            case "python":
                return f"{self.arch} python packages of {self.component}"
            case "fetch":
                return f"fetch {self.path} of {self.component}"

    def host(self) -> str:
        """The host its source names (what a machine must reach, or a site rewrite must replace)."""
        return urlsplit(self.url).hostname or self.url


class Lock(Frozen):
    lock_version: Literal[2]
    stack: str = Field(pattern=NAME_PATTERN)
    manifest_sha256: str = Field(pattern=r"^(legacy-v1:)?[0-9a-f]{64}$")
    toolkit: LockedToolkit
    base: LockedBase
    components: list[LockedComponent]
    order: list[Line]
    architectures: dict[Arch, ArchSection]
    unresolved: list[Unresolved] = Field(default_factory=list)
    lock_sha256: str = ""

    @model_serializer(mode="wrap")
    def _without_empty_unresolved(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """No `unresolved: []` in the lock file: complete locks read and write as before it existed."""
        data: dict[str, Any] = handler(self)
        if not self.unresolved:
            data.pop("unresolved", None)
        return data

    def unresolved_for(self, arch: Arch) -> list[Unresolved]:
        return [u for u in self.unresolved if u.arch in (None, arch)]

    def content_sha256(self) -> str:
        return digest(self.model_dump(mode="json", exclude={"lock_sha256"}, exclude_defaults=True))

    def package(self, arch: Arch, role: PackageRole) -> LockedPackage | None:
        section = self.architectures.get(arch)
        return section.package(role) if section else None

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
