"""Each command's options as a frozen value, made once from what argparse parsed (`parsed`): the
commands read typed fields mypy checks, never the argparse namespace. Field names are the options'
argparse destinations (tests/unit/test_cli_options.py holds the two to each other)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Args = TypeVar("Args", bound="DataclassInstance")


def parsed(kind: type[Args], args: argparse.Namespace) -> Args:
    """The options value of kind from the namespace argparse gave (each field its destination)."""
    return kind(**{f.name: getattr(args, f.name) for f in dataclasses.fields(kind)})


# -- author a stack -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class ValidateArgs:
    manifests: list[str]


@dataclasses.dataclass(frozen=True, kw_only=True)
class SchemaArgs:
    pass


@dataclasses.dataclass(frozen=True, kw_only=True)
class CheckArgs:
    stack: str
    allow_unsupported: bool


@dataclasses.dataclass(frozen=True, kw_only=True)
class NewArgs:
    version: str
    chip: str
    from_stack: str | None
    name: str | None
    output: Path | None


@dataclasses.dataclass(frozen=True, kw_only=True)
class LockArgs:
    stack: str
    check: bool
    update: str | None
    arch: list[str] | None  # None: this host's
    allow_unsupported: bool


# -- build ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class StageArgs:
    """A stack for one architecture (None: this host's)."""

    stack: str
    arch: str | None


@dataclasses.dataclass(frozen=True, kw_only=True)
class RenderArgs(StageArgs):
    output: Path | None


@dataclasses.dataclass(frozen=True, kw_only=True)
class PlanArgs(StageArgs):
    json: bool


@dataclasses.dataclass(frozen=True, kw_only=True)
class EngineArgs:
    """Where stages build and which registry stage cache they go through (build and publish)."""

    stack: str
    jobs: int
    engine: list[str]
    cache_from: str | None
    cache_to: str | None


@dataclasses.dataclass(frozen=True, kw_only=True)
class BuildArgs(EngineArgs):
    arch: str | None
    frozen: bool
    no_smoke: bool
    allow_unsupported: bool
    preflight: bool


@dataclasses.dataclass(frozen=True, kw_only=True)
class VerifyArgs(StageArgs):
    at: str | None
    second_engine: str | None
    registry: str | None


@dataclasses.dataclass(frozen=True, kw_only=True)
class SmokeArgs:
    image: str
    stack: str | None  # None: the smoke command the image carries


# -- share ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class PublishArgs(EngineArgs):
    registry: str
    alias: list[str]
    arch: list[str] | None  # None: every one the manifest lists


@dataclasses.dataclass(frozen=True, kw_only=True)
class VendorArgs:
    stack: str
    output: Path
    arch: list[str] | None  # None: every one the manifest lists


@dataclasses.dataclass(frozen=True, kw_only=True)
class ImportArgs:
    bundle: Path


# -- hand over ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class ContainerArgs:
    """What run and shell share: the command, which NPUs, and printing the docker run line instead."""

    command: list[str]
    device: list[int]
    print: bool


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunArgs(ContainerArgs):
    image: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class ShellArgs(ContainerArgs, StageArgs):
    stage: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class InspectArgs:
    image: str
    json: bool
    arch: str | None  # the variant pulled when the image is not here (None: this host's)


@dataclasses.dataclass(frozen=True, kw_only=True)
class DiffArgs:
    first: str
    second: str
    json: bool
    arch: str | None
    exit_code: bool


@dataclasses.dataclass(frozen=True, kw_only=True)
class SbomArgs:
    image: str
    output: Path | None
    arch: str | None


@dataclasses.dataclass(frozen=True, kw_only=True)
class DoctorArgs:
    stack: str | None
    json: bool


# -- tidy -----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class GcArgs:
    dry_run: bool
    keep: int
    inputs: bool
    include_recent: bool
    verify: bool
