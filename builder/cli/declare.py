"""How a command is declared, once: a frozen dataclass of its options whose fields carry their flags
(`Annotated[type, option(...)]`), registered by `CommandTable.command` with the command's name, the
task `stackbuild --help` lists it under, its summary and example, and the function that runs it.
Everything else is made from that declaration: its argparse subparser (`add_command`), the typed value
its function gets (`parsed`), the listing of `stackbuild --help` (`task_listing`), docs/cli.md and what
noxfile.py reads of the options (builder.cli.reference)."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import typing
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from builder.cli.context import Context

Args = TypeVar("Args", bound="DataclassInstance")
SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Handler: TypeAlias = "Callable[[Context, Any], int]"

# Flag's fields that are add_argument's keywords of the same name.
_ARGPARSE_KEYWORDS = ("help", "action", "nargs", "const", "default", "type", "choices", "metavar", "required")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Flag:
    """A field's place on the command line, as argparse's add_argument takes it; the field's name is
    its destination. Made by `positional`, `option` and `switch`."""

    positional: bool = False
    names: tuple[str, ...] = ()  # an option's; none: --the-field-name
    help: str | None = None
    action: str | None = None
    nargs: str | None = None
    const: str | None = None
    default: object = None
    type: Callable[[str], object] | None = None
    choices: Sequence[str] | None = None
    metavar: str | None = None
    required: bool = False
    default_stack: bool = False  # None names the project's default stack, which main() finds after parsing

    def spelled(self, dest: str) -> tuple[str, ...]:
        """How the option is written (a positional argument: its destination)."""
        if self.positional:
            return (dest,)
        return self.names or (f"--{dest.replace('_', '-')}",)

    def add_to(self, parser: argparse.ArgumentParser, dest: str) -> None:
        # Only what is given: store_true takes no nargs, type or metavar at all, not even None.
        given: dict[str, Any] = {
            key: value for key in _ARGPARSE_KEYWORDS if (value := getattr(self, key)) is not None and value is not False
        }
        if self.positional:
            parser.add_argument(dest, **given)
        else:
            parser.add_argument(*self.spelled(dest), dest=dest, **given)


def positional(
    help: str | None = None,
    *,
    nargs: str | None = None,
    metavar: str | None = None,
    type: Callable[[str], object] | None = None,
    default_stack: bool = False,
) -> Flag:
    return Flag(positional=True, help=help, nargs=nargs, metavar=metavar, type=type, default_stack=default_stack)


def option(
    *names: str,
    help: str,
    action: str | None = None,
    nargs: str | None = None,
    const: str | None = None,
    default: object = None,
    type: Callable[[str], object] | None = None,
    choices: Sequence[str] | None = None,
    metavar: str | None = None,
    required: bool = False,
) -> Flag:
    return Flag(
        names=names,
        help=help,
        action=action,
        nargs=nargs,
        const=const,
        default=default,
        type=type,
        choices=choices,
        metavar=metavar,
        required=required,
    )


def switch(help: str, *names: str) -> Flag:
    """An option that is off unless given."""
    return Flag(names=names, help=help, action="store_true")


@functools.cache  # once per class: main() asks on every call, and the hints are evaluated from strings
def flags(kind: type[DataclassInstance]) -> tuple[tuple[str, Flag], ...]:
    """Each field of kind with its Flag, in the fields' order, which is argparse's."""
    hints = typing.get_type_hints(kind, include_extras=True)
    found = []
    for field in dataclasses.fields(kind):
        marks = [mark for mark in getattr(hints[field.name], "__metadata__", ()) if isinstance(mark, Flag)]
        if len(marks) != 1:
            raise TypeError(f"{kind.__name__}.{field.name}: declare it as Annotated[<type>, option(...)], one flag")
        found.append((field.name, marks[0]))
    return tuple(found)


def parsed(kind: type[Args], args: argparse.Namespace) -> Args:
    """The options value of kind from the namespace argparse gave (each field its destination)."""
    return kind(**{f.name: getattr(args, f.name) for f in dataclasses.fields(kind)})


@dataclasses.dataclass(frozen=True, kw_only=True)
class Command:
    name: str
    args: type[DataclassInstance]  # its options, each field declared with its flag
    task: str  # what `stackbuild --help` lists it under
    summary: str  # its line there, short enough for a terminal
    help: str  # what its own --help starts with
    example: str  # the line its --help ends with, to copy
    # "module.function" under builder.cli, imported when the command runs: importing every command
    # family up front costs seconds (the SBOM's schema validator alone), and every call would pay them.
    runs: str
    # Reads or writes the cache's entries, so holds its shared lock while it runs: `gc`, which must
    # hold it alone, then never removes what the command is using.
    uses_cache: bool

    def handler(self) -> Handler:
        module, _, function = self.runs.rpartition(".")
        found: Handler = getattr(importlib.import_module(f"builder.cli.{module}"), function)
        return found

    def run(self, ctx: Context, args: argparse.Namespace) -> int:
        """The command's function, given its options as their frozen value."""
        return self.handler()(ctx, parsed(self.args, args))

    @property
    def takes_default_stack(self) -> bool:
        return any(flag.default_stack for _, flag in flags(self.args))


class CommandTable:
    """The commands a module declares, in the order `stackbuild --help` lists them."""

    def __init__(self) -> None:
        self.commands: list[Command] = []

    def command(
        self,
        name: str,
        *,
        task: str,
        summary: str,
        example: str,
        runs: str,
        help: str | None = None,  # default: the summary
        uses_cache: bool = False,
    ) -> Callable[[type[Args]], type[Args]]:
        """Declares the decorated options class as command name's."""

        def declare(args: type[Args]) -> type[Args]:
            self.commands.append(
                Command(
                    name=name,
                    args=args,
                    task=task,
                    summary=summary,
                    help=help or summary,
                    example=example,
                    runs=runs,
                    uses_cache=uses_cache,
                )
            )
            return args

        return declare


class ExampleFormatter(argparse.HelpFormatter):
    """argparse's, but the example stays one line, to copy as it is."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return indent + text if text.startswith("example: ") else super()._fill_text(text, width, indent)


def add_command(sub: SubParsers, command: Command) -> None:
    """command's subparser: what it does, its options, and an example; the namespace it parses names command."""
    parser = sub.add_parser(
        command.name,
        help=command.help,
        description=command.help,
        epilog=f"example: {command.example}",
        formatter_class=ExampleFormatter,
    )
    parser.set_defaults(declared=command)
    for dest, flag in flags(command.args):
        flag.add_to(parser, dest)


def task_listing(commands: Iterable[Command]) -> str:
    """The commands by task, each with its summary, for `stackbuild --help`."""
    tasks: dict[str, list[Command]] = {}
    for command in commands:
        tasks.setdefault(command.task, []).append(command)
    width = max(len(command.name) for group in tasks.values() for command in group)
    blocks = [
        f"{task}:\n" + "\n".join(f"  {command.name:<{width}}  {command.summary}" for command in group)
        for task, group in tasks.items()
    ]
    return "\n\n".join(blocks)
