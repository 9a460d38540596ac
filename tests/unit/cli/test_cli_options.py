"""Every command is declared once (builder.cli.declare): its options' frozen dataclass, each field with
its flag, and its command record. The parser, the typed value its function gets, `stackbuild --help`
and docs/cli.md are made from that, so an option added in that one place is in all of them; command
families import no other family."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import shlex
import typing
from typing import Annotated

import pytest

from builder.cli import COMMANDS, build_parser, make_parser
from builder.cli.arguments import positive
from builder.cli.context import Context
from builder.cli.declare import option, parsed
from builder.cli.image_commands import GcArgs
from builder.cli.reference import markdown
from tests.conftest import ROOT
from tests.helpers import run_cli

BY_NAME = {command.name: command for command in COMMANDS}


def subcommands(parser: argparse.ArgumentParser | None = None) -> dict[str, argparse.ArgumentParser]:
    parser = parser or build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_is_declared_once_and_in_the_parser() -> None:
    assert len(BY_NAME) == len(COMMANDS) == 21  # devcontainer is the 21st
    assert list(subcommands()) == list(BY_NAME)


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_a_commands_options_value_has_a_field_for_each_of_its_options_and_no_other(name: str) -> None:
    parser = subcommands()[name]
    destinations = {a.dest for a in parser._actions if not isinstance(a, argparse._HelpAction)}
    kind = BY_NAME[name].args
    assert {f.name for f in dataclasses.fields(kind)} == destinations
    value = parsed(kind, argparse.Namespace(**{d: None for d in destinations}))
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.stack = "x"  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_each_command_runs_a_function_that_takes_its_options_value(name: str) -> None:
    """What mypy would check of a direct call: the function named by `runs` exists and is typed for the
    command's own options (the name is a string so that its module is imported only when it runs)."""
    command = BY_NAME[name]
    hints = typing.get_type_hints(command.handler())
    assert hints.pop("return") is int
    assert list(hints.values()) == [Context, command.args], f"{command.runs} takes {hints}"


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_each_commands_help_ends_with_an_example_that_parses(name: str) -> None:
    """One line to copy at the end of every --help, and it is a valid invocation of that command."""
    text = subcommands()[name].format_help().rstrip()
    example = text.splitlines()[-1]
    assert example.startswith(f"example: stackbuild {name}") and len(example) <= 100, text
    words = shlex.split(example.removeprefix("example: "))
    words = words[: words.index(">")] if ">" in words else words  # a shell redirection is not the command's
    assert build_parser().parse_args(words[1:]).declared is BY_NAME[name]


def test_an_option_added_in_one_place_is_in_argparse_the_typed_options_and_the_reference() -> None:
    """Where a new option goes (docs/architecture.md): one field of its command's options class."""

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class AgedGcArgs(GcArgs):  # gc's declaration, with one field more
        older_than: Annotated[int | None, option(type=positive, metavar="DAYS", help="only images older than DAYS")]

    commands = [dataclasses.replace(c, args=AgedGcArgs) if c.name == "gc" else c for c in COMMANDS]
    parser = make_parser(commands)
    value = parsed(AgedGcArgs, parser.parse_args(["gc", "--keep", "2", "--older-than", "30"]))
    assert (value.older_than, value.keep, value.dry_run) == (30, 2, False)
    assert "--older-than DAYS  only images older than DAYS" in subcommands(parser)["gc"].format_help()
    reference = markdown(commands)
    assert "--older-than DAYS  only images older than DAYS" in reference.split("## stackbuild gc")[1]
    with pytest.raises(SystemExit):  # the values it takes are checked where it is declared
        parser.parse_args(["gc", "--older-than", "0"])
    assert "--older-than" not in markdown()  # declared in the test only


def test_a_field_without_its_flag_is_refused_when_the_parser_is_made() -> None:
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Unflagged(GcArgs):
        older_than: int | None

    commands = [dataclasses.replace(c, args=Unflagged) if c.name == "gc" else c for c in COMMANDS]
    with pytest.raises(TypeError, match=r"Unflagged.older_than: declare it as Annotated"):
        make_parser(commands)


def test_command_families_import_no_other_family() -> None:
    """What two families need lives in a module of its own (readiness, engines, arguments, screen), so a
    family's code can change without reaching into another's."""
    families = {command.runs.rpartition(".")[0] for command in COMMANDS}
    for family in sorted(families):
        tree = ast.parse((ROOT / "builder" / "cli" / f"{family}.py").read_text())
        imported = {
            node.module.removeprefix("builder.cli.")
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("builder.cli.")
        }
        imported |= {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "builder.cli"
            for alias in node.names
        }
        assert imported & families == set(), f"builder/cli/{family}.py imports {imported & families}"


@pytest.mark.parametrize("jobs", ["0", "-1", "two"])
def test_jobs_must_be_positive(capsys: pytest.CaptureFixture[str], jobs: str) -> None:
    with pytest.raises(SystemExit) as info:
        run_cli(capsys, "build", "reference", "--jobs", jobs)
    assert info.value.code == 2
    assert "is not a positive whole number" in capsys.readouterr().err
