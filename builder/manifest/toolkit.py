"""The toolkit a stack installs: the CANN release, vendor and chip, and its installer packages
per role and architecture, each downloaded from a URL or made by a local command."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Union

from pydantic import Field, Tag, model_validator

from builder.manifest.basemodel import Model, by_key
from builder.manifest.types import (
    CHIP_PATTERN,
    SHA256_PATTERN,
    VERSION_PATTERN,
    DownloadUrl,
    FileName,
    RelativePath,
    Script,
)
from builder.model.arch import Arch
from builder.model.chips import CHIPS

PackageRole = Literal["toolkit", "ops", "nnal"]
PACKAGE_ROLES: tuple[PackageRole, ...] = ("toolkit", "ops", "nnal")


class DownloadPackage(Model):
    """An installer file downloaded from `url`."""

    TAG: ClassVar[str] = "url"
    file: FileName = Field(description="installer file name, e.g. Ascend-cann-toolkit_8.5.0_linux-x86_64.zip")
    url: DownloadUrl = Field(description="where to download it (site URL rewrites apply)")
    sha256: str | None = Field(
        default=None,
        pattern=SHA256_PATTERN,
        description="expected sha256 (hex); without it the lock pins the first download",
    )


class GeneratedPackage(Model):
    """An installer file made by a local command."""

    TAG: ClassVar[str] = "generate"
    file: FileName
    generate: Script = Field(
        description="command (run from the manifest's directory) that writes the file into {output_dir}"
    )
    sha256: str | None = Field(default=None, pattern=SHA256_PATTERN)


Package = Annotated[
    Union[Annotated[DownloadPackage, Tag("url")], Annotated[GeneratedPackage, Tag("generate")]],  # noqa: UP007
    by_key(
        DownloadPackage,
        GeneratedPackage,
        message="give exactly one of 'url' (download) or 'generate' (a local command)",
    ),
]
PackageSet = dict[Arch, Package]


class Packages(Model):
    toolkit: PackageSet = Field(default_factory=dict, description="toolkit package per architecture")
    ops: PackageSet | None = Field(default=None, description="operator/kernels package (kernels-<chip> / <chip>-ops)")
    nnal: PackageSet | None = None

    def of(self, role: PackageRole) -> dict[Arch, DownloadPackage | GeneratedPackage]:
        found: dict[Arch, DownloadPackage | GeneratedPackage] = getattr(self, role) or {}
        return found


class Toolkit(Model):
    vendor: Literal["huawei", "cpusim"] = Field(
        description="huawei = real CANN; cpusim = the reference stack's CPU simulation"
    )
    version: str = Field(pattern=VERSION_PATTERN, description="CANN version, e.g. 8.5.0, 8.3.RC1")
    chip: str = Field(pattern=CHIP_PATTERN, description=f"NPU chip: {', '.join(CHIPS)}")
    packages: Packages = Field(default_factory=Packages)
    preinstalled: bool = Field(
        default=False,
        description="the base image already holds this toolkit (an official CANN image pinned by digest, as "
        "catlass's and vllm-ascend's Dockerfiles start from): the toolkit stage checks its version files "
        "against the lock instead of installing packages; give no packages then",
    )
    trust: list[RelativePath] = Field(
        default_factory=list,
        description="root CA certificates (PEM, relative to the manifest) the signed .zip packages of a CPU "
        "simulation chain to: test material, refused for vendor huawei, whose packages chain to Huawei's roots "
        "(taken from the installed ascend-deployer) or to a CA the site configuration adds (trusted_cas)",
    )

    @model_validator(mode="after")
    def trust_is_test_material(self) -> Toolkit:
        if self.trust and self.vendor != "cpusim":
            raise ValueError(
                "trust names test CAs, for vendor cpusim only: Huawei's packages are verified against Huawei's "
                "roots, and a private mirror's CA goes in the site configuration (trusted_cas)"
            )
        return self
