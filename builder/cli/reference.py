"""What is written from the commands' declarations, so it cannot drift from the CLI: docs/cli.md (each
command's --help) and the block of noxfile.py that names the options its sessions read. `python -m
builder.cli.reference` (`nox -s docs`) rewrites both in the checkout it runs in; a test checks both
are current."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from builder.cli import COMMANDS, make_parser
from builder.cli.declare import Command, flags

WIDTH = 100  # the help as a 100-column terminal shows it, whatever terminal writes the file
NOX_BEGIN = "# <generated: stackbuild's options the sessions read, from their declarations; `nox -s docs`>"
NOX_END = "# </generated>"


class _Wide(argparse.HelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=WIDTH)


class _WideRaw(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=WIDTH)


def _help(parser: argparse.ArgumentParser) -> str:
    """parser's --help at WIDTH columns (parser is this module's own: build_parser's cache is not touched)."""
    raw = issubclass(parser.formatter_class, argparse.RawDescriptionHelpFormatter)  # type: ignore[arg-type]
    parser.formatter_class = _WideRaw if raw else _Wide
    return parser.format_help().rstrip() + "\n"


def markdown(commands: Sequence[Command] = COMMANDS) -> str:
    """The reference: `stackbuild --help`, then each command's --help, in the order --help lists them."""
    parser = make_parser(commands)
    (subcommands,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    parts = [
        "# CLI reference\n",
        "Generated from the commands' declarations (`builder/cli/stack_commands.py`, "
        "`builder/cli/image_commands.py`), as their `--help` shows them, by `python -m builder.cli.reference` "
        "(`nox -s docs`); `tests/unit/project/test_docs.py` fails when it is out of date. "
        "What each command does, at more length: [commands.md](commands.md).\n",
        f"```text\n{_help(parser)}```\n",
    ]
    for name, sub in subcommands.choices.items():
        parts.append(f"## stackbuild {name}\n\n```text\n{_help(sub)}```\n")
    return "\n".join(parts)


def _option(commands: Sequence[Command], command: str, field: str) -> tuple[str, tuple[str, ...]]:
    """How command's option field is written, and the values it takes (none: any)."""
    (declared,) = (c for c in commands if c.name == command)
    flag = dict(flags(declared.args))[field]
    return flag.spelled(field)[0], tuple(flag.choices or ())


def nox_block(commands: Sequence[Command] = COMMANDS) -> str:
    """noxfile.py's generated block: the options its sessions look for among the arguments they pass on."""
    arches = {_option(commands, name, "arch") for name in ("build", "lock", "publish")}
    if len(arches) != 1:  # noxfile.py's _foreign reads one --arch, whichever command the session runs
        raise ValueError(f"build, lock and publish name architectures differently: {sorted(arches)}")
    ((arch, choices),) = arches
    facts = (
        ("ARCHITECTURES", choices, "every architecture --arch names"),
        ("ARCH", arch, "build's, lock's and publish's architecture"),
        ("CHECK", _option(commands, "lock", "check")[0], "lock's: check the lock, write nothing"),
        ("PREFLIGHT", _option(commands, "build", "preflight")[0], "build's: only what needs no engine"),
    )
    lines = [f"{name} = {_python(value)}  # {why}" for name, value, why in facts]
    return "\n".join([NOX_BEGIN, *lines, NOX_END])


def _python(value: object) -> str:
    """value as ruff formats it: strings double-quoted, tuples of them too."""
    if isinstance(value, (tuple, list)):
        return f"({', '.join(json.dumps(item) for item in value)})"
    return json.dumps(value)


def noxfile_with_block(text: str, block: str) -> str:
    """noxfile.py's text with its generated block replaced by block."""
    head, begin, rest = text.partition(NOX_BEGIN)
    _, end, tail = rest.partition(NOX_END)
    if not (begin and end):
        raise ValueError(f"noxfile.py has no block from {NOX_BEGIN!r} to {NOX_END!r}")
    return head + block + tail


def write(checkout: Path) -> None:
    (checkout / "docs" / "cli.md").write_text(markdown())
    noxfile = checkout / "noxfile.py"
    noxfile.write_text(noxfile_with_block(noxfile.read_text(), nox_block()))


if __name__ == "__main__":
    write(Path.cwd())
