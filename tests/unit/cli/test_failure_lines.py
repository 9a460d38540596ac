"""A failure is one line: an unwritable output names the place, and anything else names a log with the
traceback (which --debug prints instead)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers import run_cli
from tests.unit.conftest import cli


def test_render_to_an_unwritable_place(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    code, _, err = run_cli(capsys, "--root", str(ROOT), "render", "reference", "-o", str(tmp_path / "file"))
    assert code == 2 and "cannot write there" in err


def test_unexpected_errors_name_a_log_with_the_traceback(tmp_path: Path) -> None:
    """The boundary: anything unexpected is one line naming a log with the traceback."""
    root = tmp_path / "root"
    shutil.copytree(ROOT / "stacks", root / "stacks", ignore=shutil.ignore_patterns("build", "__pycache__"))
    shutil.copytree(ROOT / "lockfiles", root / "lockfiles")
    code = (
        "import builder.execute.chain as c; c.make_plan = None; from builder.cli import main; raise SystemExit(main())"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, "--root", str(root), "render", "reference"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert run.returncode == 1
    assert len(run.stderr.strip().splitlines()) == 1 and "internal error: TypeError" in run.stderr
    log = Path(run.stderr.split("traceback in ")[1].rstrip(")\n"))
    assert "Traceback" in log.read_text()


def test_a_failure_is_one_line_naming_its_traceback_and_debug_shows_it(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = project / "stacks" / "demo.yaml"
    missing = project.parent / "no-such-repo"
    manifest.write_text(
        manifest.read_text().replace("source: {path: app}", f"source: {{git: 'file://{missing}', ref: main}}", 1)
    )
    code, _, err = cli(capsys, project, "lock", "demo")
    lines = [line for line in err.splitlines() if line.startswith("stackbuild:")]
    assert code == 1 and len(lines) == 1 and "cannot list refs" in lines[0], err
    log = Path(lines[0].rsplit("traceback in ", 1)[1].rstrip(")"))
    assert "SourceError" in log.read_text()
    code, _, err = cli(capsys, project, "--debug", "lock", "demo")
    assert code == 1 and "Traceback (most recent call last)" in err
