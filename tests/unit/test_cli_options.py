"""Every command's options reach it as its frozen value: the value's fields are exactly the command's
argparse destinations, so an option added to the parser without its field (or the other way round)
fails here, not as an AttributeError in a user's build."""

from __future__ import annotations

import argparse
import dataclasses
import shlex

import pytest

from builder.cli import build_parser, options

FOR_COMMAND: dict[str, type[object]] = {
    "validate": options.ValidateArgs,
    "schema": options.SchemaArgs,
    "check": options.CheckArgs,
    "new": options.NewArgs,
    "lock": options.LockArgs,
    "render": options.RenderArgs,
    "plan": options.PlanArgs,
    "build": options.BuildArgs,
    "verify-reproducible": options.VerifyArgs,
    "smoke": options.SmokeArgs,
    "publish": options.PublishArgs,
    "vendor": options.VendorArgs,
    "import": options.ImportArgs,
    "run": options.RunArgs,
    "shell": options.ShellArgs,
    "inspect": options.InspectArgs,
    "diff": options.DiffArgs,
    "sbom": options.SbomArgs,
    "doctor": options.DoctorArgs,
    "gc": options.GcArgs,
}


def subcommands() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_has_an_options_value() -> None:
    assert set(FOR_COMMAND) == set(subcommands())


@pytest.mark.parametrize("name", sorted(FOR_COMMAND))
def test_a_commands_options_value_has_a_field_for_each_of_its_options_and_no_other(name: str) -> None:
    parser = subcommands()[name]
    destinations = {a.dest for a in parser._actions if not isinstance(a, argparse._HelpAction)}
    kind = FOR_COMMAND[name]
    assert {f.name for f in dataclasses.fields(kind)} == destinations  # type: ignore[arg-type]
    value = options.parsed(kind, argparse.Namespace(**{d: None for d in destinations}))  # type: ignore[type-var]
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.stack = "x"  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(FOR_COMMAND))
def test_each_commands_help_ends_with_an_example_that_parses(name: str) -> None:
    """One line to copy at the end of every --help, and it is a valid invocation of that command."""
    text = subcommands()[name].format_help().rstrip()
    example = text.splitlines()[-1]
    assert example.startswith(f"example: stackbuild {name}") and len(example) <= 100, text
    words = shlex.split(example.removeprefix("example: "))
    words = words[: words.index(">")] if ">" in words else words  # a shell redirection is not the command's
    parsed = build_parser().parse_args(words[1:])
    assert parsed.target is subcommands()[name].get_default("target")
