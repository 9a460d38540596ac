"""The layers a stack builds on its toolkit: each component's source (a git repository or a
directory), the files its build fetches, what it builds, installs and exports, and how its stage
is probed."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Union

from pydantic import Field, StringConstraints, Tag, field_validator

from builder.manifest.basemodel import Model, by_key, one_of
from builder.manifest.probe_specs import Probe
from builder.manifest.types import (
    ENV_NAME_PATTERN,
    ID_PATTERN,
    MODULE_PATTERN,
    SHA256_PATTERN,
    CopyPath,
    DebPackage,
    DownloadUrl,
    Line,
    PythonRequirement,
    RelativePath,
    Script,
    relative_path,
)
from builder.model import plugins


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


# The kinds of source, each one module (builder.inputs.source_kinds says what a kind is): the manifest
# takes the member whose key an entry has.
_SOURCE_KINDS = plugins.loaded(plugins.SOURCES).values()
if TYPE_CHECKING:
    Source = Model
else:
    Source = Annotated[
        Union[tuple(Annotated[kind.spec, Tag(kind.tag)] for kind in _SOURCE_KINDS)],  # noqa: UP007
        by_key(
            *(kind.spec for kind in _SOURCE_KINDS),
            message="give exactly one of " + one_of([kind.hint for kind in _SOURCE_KINDS]),
        ),
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
