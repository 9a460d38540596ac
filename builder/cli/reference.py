"""docs/cli.md written from the parser itself, so the reference cannot drift from the CLI:
`python -m builder.cli.reference > docs/cli.md` (`nox -s docs`); a test checks it is current."""

from __future__ import annotations

import argparse

from builder.cli import build_parser

WIDTH = 100  # the help as a 100-column terminal shows it, whatever terminal writes the file


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


def markdown() -> str:
    """The reference: `stackbuild --help`, then each command's --help, in the order --help lists them."""
    parser = build_parser.__wrapped__()
    (commands,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    parts = [
        "# CLI reference\n",
        "Generated from the CLI's own `--help` by `python -m builder.cli.reference > docs/cli.md` "
        "(`nox -s docs`); `tests/unit/test_docs.py` fails when it is out of date. "
        "What each command does, at more length: [commands.md](commands.md).\n",
        f"```text\n{_help(parser)}```\n",
    ]
    for name, sub in commands.choices.items():
        parts.append(f"## stackbuild {name}\n\n```text\n{_help(sub)}```\n")
    return "\n".join(parts)


if __name__ == "__main__":
    print(markdown(), end="")
