"""The manifest model (`stacks/<name>.yaml`, schema 1): pure types, validated by pydantic; here the
document and its host, platform and smoke, its parts in toolkit, bases and components.

Kinds are tagged unions (a source is git or path, a base an image or a bootstrap, a package
downloaded or generated): each member has only its own fields. The unions of sources and bases are
made of the kinds found (builder.model.plugins): a plug-in's kind is a member like stackbuild's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import ConfigDict, Discriminator, Field, StrictInt, Tag, field_validator

from builder.manifest.basemodel import Model, by_key, one_of
from builder.manifest.bases import AptRepository
from builder.manifest.components import Component
from builder.manifest.toolkit import Toolkit
from builder.manifest.types import (
    MAX_ID,
    NAME_PATTERN,
    USER_NAME,
    DebPackage,
    Line,
    PythonIndex,
    Regex,
    Script,
)
from builder.model import plugins
from builder.model.arch import Arch

SCHEMA_VERSION = 1

# The kinds of base, each one module (builder.inputs.base_kinds says what a kind is): the manifest
# takes the member whose key its base has.
_BASE_KINDS = plugins.loaded(plugins.BASES).values()
if TYPE_CHECKING:
    Base = Model
else:
    Base = Annotated[
        Union[tuple(Annotated[kind.spec, Tag(kind.tag)] for kind in _BASE_KINDS)],  # noqa: UP007
        by_key(
            *(kind.spec for kind in _BASE_KINDS),
            message="give exactly one of " + one_of([kind.hint for kind in _BASE_KINDS]),
        ),
    ]


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


class Smoke(Model):
    command: Script = Field(min_length=1)
    expect: Regex = Field(description="regular expression the output of a successful run matches")
    needs_device: bool = Field(default=False, description="the command launches on an NPU")


ROOT: Literal["root"] = "root"


class RunUser(Model):
    """The user the final images run as: a passwd entry, its group of the same name and a home, made
    in each final image with fixed IDs (the host's driver user's, so files and devices agree)."""

    # Checked by the validators below (their messages say the fix); the schema says the same for editors.
    name: str = Field(
        description="the user and its group, e.g. HwHiAiUser (the NPU driver's run user)",
        json_schema_extra={"pattern": f"^{USER_NAME.pattern}$"},
    )
    uid: StrictInt = Field(
        description=f"its UID, 1 to {MAX_ID}: the host's `id -u HwHiAiUser`, often 1000",
        json_schema_extra={"minimum": 1, "maximum": MAX_ID},
    )
    gid: StrictInt = Field(
        description=f"its group's GID, 1 to {MAX_ID}: the host's `id -g HwHiAiUser`",
        json_schema_extra={"minimum": 1, "maximum": MAX_ID},
    )

    @field_validator("name")
    @classmethod
    def user_name(cls, value: str) -> str:
        if value == ROOT:
            raise ValueError("root is not a user to make: write `user: root` for images that run as root")
        if not USER_NAME.fullmatch(value):
            raise ValueError(
                f"{value[:40]!r} is not a user name useradd takes: a letter or '_', then letters, digits, '_' "
                "or '-', at most 32 in all (e.g. HwHiAiUser)"
            )
        return value

    @field_validator("uid", "gid")
    @classmethod
    def in_range(cls, value: int) -> int:
        if not 1 <= value <= MAX_ID:
            raise ValueError(
                f"{value} is out of range: give 1 to {MAX_ID} (0 is root's: write `user: root`; 65534 is nobody's)"
            )
        return value


def _user_form(data: Any) -> str | None:
    """`root`, or a mapping (a user to make); anything else is neither (None: the error below)."""
    if data == ROOT:
        return ROOT
    return "user" if isinstance(data, dict | RunUser) else None


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
    compile_cache: Literal["ccache"] | None = Field(
        default=None,
        description="the compiler cache component builds reach through a BuildKit cache mount (the Debian package "
        "of the tool, its .deb closure locked like the system packages and never installed in an image); none: "
        "every component compiles from nothing when its stage is built",
    )
    user: Annotated[
        Annotated[Literal["root"], Tag(ROOT)] | Annotated[RunUser, Tag("user")],
        Discriminator(
            _user_form,
            custom_error_type="user_form",
            custom_error_message="give `root`, or the user to make as {name: HwHiAiUser, uid: 1000, gid: 1000}",
        ),
    ] = Field(
        default=ROOT,
        description="who the final images run as: root (the default, as the official CANN images do), or a user "
        "made in them with fixed IDs, e.g. {name: HwHiAiUser, uid: 1000, gid: 1000}, the NPU driver's run user "
        "(`run` and the smoke add the host's NPU group, so the devices open for it)",
    )
    smoke: Smoke

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @property
    def run_user(self) -> RunUser | None:
        """The user the final images run as; None: root."""
        return self.user if isinstance(self.user, RunUser) else None

    def component(self, component_id: str) -> Component:
        return next(c for c in self.components if c.id == component_id)
