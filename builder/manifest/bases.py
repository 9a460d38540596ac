"""Where a stack's operating system and its Debian packages come from: what a bootstrapped base is
made of (the kinds of base are modules of their own: builder.inputs.base_kinds) and the apt
repositories besides the base's own."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from builder.manifest.basemodel import Model
from builder.manifest.types import DebPackage, FileName, MirrorUrl, Suite
from builder.model.arch import Arch


class Bootstrap(Model):
    tool: Literal["mmdebstrap"] = "mmdebstrap"
    suite: Suite
    mirror: MirrorUrl
    variant: Literal["apt", "minbase", "required", "important", "standard"] = "apt"
    packages: list[DebPackage] = Field(default_factory=list, description="packages of the build (devel) base")
    runtime_packages: list[DebPackage] = Field(
        default_factory=list, description="packages of the smaller base the runtime image starts from"
    )
    components: list[Suite] = Field(
        default_factory=lambda: ["main"], description="archive areas, e.g. [main, universe] on Ubuntu"
    )
    mirrors: dict[Arch, MirrorUrl] = Field(
        default_factory=dict,
        description="an architecture's own mirror where it differs (Ubuntu's arm64 is on ports.ubuntu.com)",
    )
    keyring: FileName | None = Field(
        default=None,
        description="the archive's signing keys when the host does not have them (Ubuntu on a Debian host): a "
        "file next to the manifest, else one stackbuild ships (ubuntu-keyring-2018-archive.gpg); the base keeps it in "
        "/etc/apt/trusted.gpg.d",
    )

    @field_validator("keyring")
    @classmethod
    def keyring_file(cls, value: str | None) -> str | None:
        if value is not None and not value.endswith((".gpg", ".asc")):
            raise ValueError(f"{value!r}: apt reads keyrings named *.gpg or *.asc only")
        return value

    def mirror_for(self, arch: Arch) -> str:
        return self.mirrors.get(arch, self.mirror)


class AptRepository(Model):
    """An apt repository besides the base's own, for system packages."""

    url: MirrorUrl = Field(description="repository URL (site URL rewrites apply)")
    suite: Suite = Field(description="the suite (distribution) to use, e.g. bookworm, jammy-updates, stable")
    components: list[Suite] = Field(
        default_factory=lambda: ["main"], description="archive areas, e.g. [main, universe]"
    )
    trusted: bool = Field(
        default=False,
        description="an unsigned repository (e.g. a local one); what the lock takes from it is pinned by sha256",
    )
    mirrors: dict[Arch, MirrorUrl] = Field(
        default_factory=dict,
        description="an architecture's own URL where it differs (Ubuntu's arm64 is on ports.ubuntu.com)",
    )

    def url_for(self, arch: Arch) -> str:
        return self.mirrors.get(arch, self.url)
