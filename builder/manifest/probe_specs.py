"""The probes a component declares: checks run in its stage's image once it is built."""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import Field

from builder.manifest.basemodel import Model
from builder.manifest.types import Line, Regex, Script


class ElfSectionProbe(Model):
    kind: Literal["elf-section"]
    file: Line
    section: Line


class LinkedFromProbe(Model):
    kind: Literal["linked-from"]
    file: Line
    within: Line = Field(description="directory the named libraries must resolve inside (e.g. the toolkit)")
    libraries: list[Line] = Field(default_factory=list)


class EnvProbe(Model):
    kind: Literal["env"]
    set: list[Line] = Field(default_factory=list, description="variables that must be set")
    paths: list[Line] = Field(default_factory=list, description="variables whose value (a path) must exist")


class CommandProbe(Model):
    kind: Literal["command"]
    run: Script
    exit_code: int = 0
    expect: Regex | None = Field(default=None, description="regular expression the output must match")


Probe = Annotated[Union[ElfSectionProbe, LinkedFromProbe, EnvProbe, CommandProbe], Field(discriminator="kind")]  # noqa: UP007
