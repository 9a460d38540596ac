"""docs/cli.md is what the CLI's own --help says and noxfile.py reads the options as they are declared
(both written from the commands' declarations), `stackbuild --help` lists every command by task on lines
a terminal shows whole, and the README stays a short page whose links lead somewhere."""

from __future__ import annotations

import re

import pytest

from builder.cli import COMMANDS
from builder.cli.declare import task_listing
from builder.cli.reference import NOX_BEGIN, markdown, nox_block, noxfile_with_block
from tests.conftest import ROOT

OUT_OF_DATE = "out of date: run `nox -s docs` (or python -m builder.cli.reference)"


def test_the_cli_reference_is_the_clis_own_help() -> None:
    written = (ROOT / "docs" / "cli.md").read_text()
    assert written == markdown(), f"docs/cli.md is {OUT_OF_DATE}"


def test_the_noxfile_reads_the_options_as_they_are_declared() -> None:
    noxfile = (ROOT / "noxfile.py").read_text()
    assert noxfile == noxfile_with_block(noxfile, nox_block()), f"noxfile.py's generated block is {OUT_OF_DATE}"
    assert 'ARCH = "--arch"' in noxfile and "if flag == ARCH]" in noxfile  # what the sessions read is the block
    with pytest.raises(ValueError, match="no block"):
        noxfile_with_block(noxfile.replace(NOX_BEGIN, "# gone"), nox_block())


def test_every_command_is_listed_under_one_task_on_a_line_a_terminal_shows_whole() -> None:
    listing = task_listing(COMMANDS)
    listed = [line.split()[0] for line in listing.splitlines() if line.startswith("  ")]
    assert sorted(listed) == sorted(c.name for c in COMMANDS)
    assert all(len(line) <= 100 for line in listing.splitlines())


def test_the_readme_stays_short_and_every_link_in_the_docs_leads_somewhere() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 160, "README.md is for a newcomer: put what you add into docs/"
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" not in target:
                assert (page.parent / target).exists(), f"{page.relative_to(ROOT)}: link to {target} leads nowhere"


def test_the_readme_shows_no_image_id_a_reader_would_compare_with_their_own() -> None:
    """Image ids follow the lock and the image prefix: one written in the README goes stale with the next
    relock and reads like a reproducibility bug to a newcomer whose build prints another."""
    readme = (ROOT / "README.md").read_text()
    assert not re.findall(r"(?m)^    \S+:\S+  [0-9a-f]{12}  ", readme)
