"""The manifest model (`stacks/<name>.yaml`, schema 1): pure types, validated by pydantic.

Kinds are tagged unions (a source is git or path, a base an image or a bootstrap, a package
downloaded or generated): each member has only its own fields, so `match` narrows them.
"""

from __future__ import annotations

import re
from typing import Annotated, ClassVar, Literal, Union

from pydantic import ConfigDict, Field, StringConstraints, Tag, field_validator, model_validator

from builder.manifest.common import Model, by_key
from builder.manifest.probes import Probe
from builder.manifest.types import (
    CopyPath,
    DebPackage,
    DownloadUrl,
    FileName,
    GitRef,
    GitUrl,
    Line,
    MirrorUrl,
    PythonIndex,
    PythonRequirement,
    Regex,
    RelativePath,
    Script,
    Suite,
    relative_path,
)
from builder.model.arch import Arch
from builder.model.chips import CHIPS

SCHEMA_VERSION = 1
# A component id names a Docker build stage and a build argument in its dependents' Dockerfiles
# (`FROM ${<ID>_IMAGE} AS <id>`): a letter first, then letters, digits and '-' (no '_' or '.').
ID_PATTERN = r"^[a-z][a-z0-9-]*$"
SHA256_PATTERN = r"^[0-9a-f]{64}$"
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
VERSION_PATTERN = r"^\d+\.\d+\.(\d+|RC\d+)(\.\w+)?$"
CHIP_PATTERN = rf"^({'|'.join(CHIPS)})$"
IMAGE_PATTERN = r"^[^@\s]+@sha256:[0-9a-f]{64}$"
MODULE_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"
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


class Fetch(Model):
    """A file a component's build needs from elsewhere, pinned and placed in its source tree, so the
    build needs no network (a third-party tarball its build script would download)."""

    url: DownloadUrl = Field(description="where to download it (site URL rewrites and installer_dirs apply)")
    to: CopyPath = Field(description="where it goes, relative to the component's directory")
    sha256: str | None = Field(
        default=None,
        pattern=SHA256_PATTERN,
        description="expected sha256 (hex); without it the lock pins the first download",
    )

    @field_validator("to")
    @classmethod
    def inside(cls, value: str) -> str:
        return relative_path(value)

    @property
    def file(self) -> str:
        """The file name installer_dirs are searched for: the last part of `to`."""
        return self.to.rsplit("/", 1)[-1]


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


class Host(Model):
    """What lives on the host, never in the image: the versions this image is certified for."""

    driver: Line = Field(description="NPU driver (HDK) version, e.g. 25.5.0; 'none' for a CPU simulation")
    firmware: Line | None = None


class Platform(Model):
    os: Literal["debian", "ubuntu", "openeuler"]
    os_version: str = Field(pattern=r"^[0-9A-Za-z.]+$")
    python: str = Field(pattern=r"^3\.\d+$", description="the Python version every Python layer runs on, e.g. 3.11")
    python_from: Literal["distribution", "base"] = Field(
        default="distribution",
        description="where python3 comes from: the distribution's own package (`check` refuses a release that "
        "ships another version, e.g. Ubuntu 22.04 has 3.10), or installed in the base image itself, as the "
        "official CANN images build it; the base stage probes `python3 --version` either way",
    )
    architectures: list[Arch] = Field(min_length=1)

    @field_validator("architectures")
    @classmethod
    def unique(cls, value: list[Arch]) -> list[Arch]:
        if len(set(value)) != len(value):
            raise ValueError("architectures listed twice")
        return value


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


class ImageBase(Model):
    TAG: ClassVar[str] = "image"
    image: Line = Field(pattern=IMAGE_PATTERN, description="image reference pinned by digest")


class BootstrapBase(Model):
    TAG: ClassVar[str] = "bootstrap"
    bootstrap: Bootstrap


Base = Annotated[
    Union[Annotated[ImageBase, Tag("image")], Annotated[BootstrapBase, Tag("bootstrap")]],  # noqa: UP007
    by_key(ImageBase, BootstrapBase, message="give exactly one of 'image' (pinned by digest) or 'bootstrap'"),
]


class GitSource(Model):
    TAG: ClassVar[str] = "git"
    git: GitUrl = Field(description="repository URL, or site:NAME for the site config's repos")
    ref: GitRef = Field(description="branch, tag or commit of the git source")
    keep_git: bool = Field(
        default=False,
        description="the build context holds a git checkout (.git, shallow, at the pinned commit, with its tags and "
        "submodules) for build scripts that call git; otherwise only the files",
    )
    skip_submodules: list[RelativePath] = Field(
        default_factory=list,
        description="submodules (paths from the repository root, nested ones too: a/b/c) left out of the lock and "
        "the checkout, and marked update=none so `git submodule update` leaves them alone: for parts a build does "
        "not use whose commits cannot be had",
    )


class PathSource(Model):
    TAG: ClassVar[str] = "path"
    path: Line = Field(description="directory, relative to the manifest (inside its repository)")


Source = Annotated[
    Union[Annotated[GitSource, Tag("git")], Annotated[PathSource, Tag("path")]],  # noqa: UP007
    by_key(GitSource, PathSource, message="give exactly one of 'git' (with 'ref') or 'path'"),
]


class Artifact(Model):
    path: CopyPath = Field(description="file or directory, relative to the component's directory")
    runtime: bool = Field(default=False, description="also copy into the runtime image")

    @field_validator("path")
    @classmethod
    def relative(cls, value: str) -> str:
        if value.startswith("/") or ".." in value.split("/"):
            raise ValueError(f"artifact path must be relative and stay inside the component: {value}")
        return value


# Whole system directories: an install names what it adds inside them.
SYSTEM_ROOTS = {
    *("/usr", "/usr/local", "/usr/lib", "/usr/bin", "/usr/include", "/usr/share", "/usr/local/lib", "/usr/local/bin"),
    *("/etc", "/opt", "/var", "/bin", "/lib", "/lib64", "/sbin", "/tmp", "/root", "/home"),
}


class Install(Model):
    """Something a component's build installs outside its own directory (e.g. under the toolkit)."""

    path: CopyPath = Field(description="absolute path the build installs (a file or a directory)")
    runtime: bool = Field(default=False, description="also copy into the runtime image")

    @field_validator("path")
    @classmethod
    def absolute(cls, value: str) -> str:
        if not value.startswith("/") or ".." in value.split("/") or "//" in value or value.endswith("/"):
            raise ValueError(f"an install is an absolute path without '..' or a trailing '/': {value}")
        if value in SYSTEM_ROOTS or value == "/" or value == "/opt/stack" or value.startswith("/opt/stack/"):
            raise ValueError(
                f"{value} is a whole system directory or a component's own: name what the build adds inside it"
            )
        return value


class Component(Model):
    id: str = Field(pattern=ID_PATTERN)
    source: Source
    depends_on: list[Line] = Field(default_factory=list)
    system_packages: list[DebPackage] = Field(
        default_factory=list,
        description="Debian packages this component's build needs (name, name:arch or name=version): the lock pins "
        "their whole dependency closure; installed offline in this stage, its dependents' and the devel image",
    )
    build: list[Script] = Field(
        default_factory=list,
        description="shell scripts run one after the other in the component's directory (bash -eo pipefail)",
    )
    env: dict[str, Line] = Field(default_factory=dict, description="variables exported to later stages and the image")
    env_scripts: list[RelativePath] = Field(
        default_factory=list,
        description="the component's own environment scripts (e.g. tilelang-ascend's set_env.sh), paths in its "
        "directory, each one an artifact or inside one: sourced after the release's before its dependents' builds; "
        "what they set is baked into its stage, its dependents', the devel image and (when the script reaches it) "
        "the runtime image as ENV, and the images' entrypoint sources them again",
    )
    artifacts: list[Artifact] = Field(default_factory=list)
    fetch: list[Fetch] = Field(
        default_factory=list,
        description="files the build needs from elsewhere (a third-party tarball its build script would "
        "download): each pinned by the lock, kept in the cache (vendor and import carry it) and placed at `to` "
        "in the component's directory before the build",
    )
    installs: list[Install] = Field(
        default_factory=list,
        description="what the build installs outside /opt/stack/<id>: carried to dependents and the devel image",
    )
    python_packages: list[PythonRequirement] = Field(
        default_factory=list,
        description="requirement lines (e.g. numpy==1.26.4) the lock resolves to exact wheels with hashes for the "
        "stack's Python and each architecture; installed offline (--no-index --require-hashes) into "
        "/opt/stack/<id>/.python-packages (on PYTHONPATH), before the build; in the runtime image when the "
        "component puts anything there",
    )
    imports: list[Annotated[str, StringConstraints(pattern=MODULE_PATTERN)]] = Field(
        default_factory=list,
        description="Python modules the component provides (e.g. tilelang): each imported by a fresh python3 in its "
        "stage, in the devel image and, when the component reaches it, in the runtime image",
    )
    probes: list[Probe] = Field(default_factory=list)
    network: bool = Field(
        default=False,
        description="the build reaches the network: a reproducibility hole `plan` and the lock show "
        "(stages build without network otherwise)",
    )

    @field_validator("env")
    @classmethod
    def env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not re.fullmatch(ENV_NAME_PATTERN, name):
                raise ValueError(f"{name[:80]!r} is not a valid environment variable name")
        return value

    @property
    def reaches_runtime(self) -> bool:
        """Whether anything of the component (an artifact or an install) is in the runtime image."""
        return any(a.runtime for a in self.artifacts) or any(i.runtime for i in self.installs)

    def artifact_of(self, path: str) -> Artifact | None:
        """The artifact that is path or holds it (path: relative to the component's directory)."""
        return next((a for a in self.artifacts if path == a.path or path.startswith(a.path.rstrip("/") + "/")), None)


class Smoke(Model):
    command: Script = Field(min_length=1)
    expect: Regex = Field(description="regular expression the output of a successful run matches")
    needs_device: bool = Field(default=False, description="the command launches on an NPU")


class Manifest(Model):
    schema_: Literal[1] = Field(alias="schema")
    name: str = Field(pattern=NAME_PATTERN)
    description: Script = ""
    toolkit: Toolkit
    host: Host
    platform: Platform
    base: Base
    system_packages: list[DebPackage] = Field(
        default_factory=list,
        description="Debian packages every build stage needs (python3, compilers, cmake on a bare image base): "
        "installed into the devel base, offline, from the .deb closure the lock pins",
    )
    runtime_system_packages: list[DebPackage] = Field(
        default_factory=list, description="the same for the runtime base (what the runtime image needs to run)"
    )
    apt_repositories: list[AptRepository] = Field(
        default_factory=list, description="where system packages come from besides the base's own apt sources"
    )
    python_index: PythonIndex | Annotated[list[PythonIndex], Field(min_length=1)] = Field(
        default="https://pypi.org/simple",
        description="where python_packages come from: an index URL (PEP 503) or a wheelhouse directory relative to "
        "the manifest, or an ordered list of them (each project from the first that has it, never merged across "
        "them: e.g. PyTorch's CPU index for torch's +cpu builds, then PyPI); site URL rewrites apply, and the site "
        "config's python_index replaces it (an internal index, an air-gapped wheelhouse)",
    )
    components: list[Component] = Field(
        default_factory=list, description="the layers built on the toolkit (none: a toolkit-only stack)"
    )
    smoke: Smoke

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def component(self, component_id: str) -> Component:
        return next(c for c in self.components if c.id == component_id)
