"""The toolkit a stack installs: the CANN release, vendor and chip, and its installer packages
per role and architecture, each a member of the union the package kinds make (downloaded from a
URL, made by a local command, or a plug-in's)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal, Protocol, Union

from pydantic import Field, Tag, model_validator

from builder.manifest.basemodel import Model, by_key, one_of
from builder.manifest.types import CHIP_PATTERN, VERSION_PATTERN, PackageRole, RelativePath
from builder.model import plugins
from builder.model.arch import Arch
from builder.model.chips import CHIPS

PACKAGE_ROLES: tuple[PackageRole, ...] = ("toolkit", "ops", "nnal")

# The kinds of installer package, each one module (builder.inputs.package_kinds says what a kind is):
# the manifest takes the member whose key an entry has.
_PACKAGE_KINDS = plugins.loaded(plugins.PACKAGES).values()
if TYPE_CHECKING:

    class PackageEntry(Protocol):
        """What the manifest entry of every kind has (compatibility and the lock read it)."""

        @property
        def file(self) -> str: ...
        @property
        def sha256(self) -> str | None: ...

    Package = PackageEntry
else:
    Package = Annotated[
        Union[tuple(Annotated[kind.spec, Tag(kind.spec.TAG)] for kind in _PACKAGE_KINDS)],  # noqa: UP007
        by_key(
            *(kind.spec for kind in _PACKAGE_KINDS),
            message="give exactly one of " + one_of([kind.hint for kind in _PACKAGE_KINDS]),
        ),
    ]
PackageSet = dict[Arch, Package]


class Packages(Model):
    toolkit: PackageSet = Field(default_factory=dict, description="toolkit package per architecture")
    ops: PackageSet | None = Field(default=None, description="operator/kernels package (kernels-<chip> / <chip>-ops)")
    nnal: PackageSet | None = None

    def of(self, role: PackageRole) -> dict[Arch, Package]:
        found: dict[Arch, Package] = getattr(self, role) or {}
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
