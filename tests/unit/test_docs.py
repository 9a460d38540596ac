"""docs/cli.md is what the CLI's own --help says, `stackbuild --help` lists every command by task, and the
README stays a short page whose links lead somewhere."""

from __future__ import annotations

import argparse
import re

from builder.cli import build_parser
from builder.cli.commands import TASKS
from builder.cli.reference import markdown
from tests.conftest import ROOT


def test_the_cli_reference_is_the_clis_own_help() -> None:
    written = (ROOT / "docs" / "cli.md").read_text()
    assert written == markdown(), "docs/cli.md is out of date: run `nox -s docs` (or python -m builder.cli.reference)"


def test_every_command_is_listed_under_exactly_one_task() -> None:
    (commands,) = (a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    listed = [name for _, group in TASKS for name, _ in group]
    assert sorted(listed) == sorted(commands.choices), "builder/cli/commands.py TASKS: list each command once"
    assert all(len(f"  {name:<20}  {summary}") <= 100 for _, group in TASKS for name, summary in group)


def test_the_readme_stays_short_and_every_link_in_the_docs_leads_somewhere() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 160, "README.md is for a newcomer: put what you add into docs/"
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" not in target:
                assert (page.parent / target).exists(), f"{page.relative_to(ROOT)}: link to {target} leads nowhere"
