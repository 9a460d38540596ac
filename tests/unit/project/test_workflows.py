"""The GitHub workflows: valid against GitHub's workflow schema (the one check-jsonschema ships),
linted by actionlint where it is installed, and calling only nox sessions that exist."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
CHECK = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows"]


def nox_sessions() -> set[str]:
    """Each session's name: its name= argument, else its function's."""
    found = re.finditer(
        r"@nox\.session(?:\((?P<args>[^)]*)\))?\ndef (?P<function>\w+)\(", (ROOT / "noxfile.py").read_text()
    )
    names = set()
    for match in found:
        named = re.search(r'name="([\w-]+)"', match.group("args") or "")
        names.add(named.group(1) if named else match.group("function"))
    return names


def test_there_are_workflows_for_ci_builds_publishing_and_pin_refreshes() -> None:
    assert {p.stem for p in WORKFLOWS} >= {"ci", "build", "publish", "refresh-pins"}


def test_workflows_match_githubs_schema_and_a_broken_one_beside_them_is_caught(tmp_path: Path) -> None:
    """One run of the checker (its start-up is most of its time): every workflow passes, the broken
    copy fails, and only the broken copy is named."""
    broken = tmp_path / "broken.yml"
    broken.write_text((ROOT / ".github" / "workflows" / "ci.yml").read_text().replace("runs-on:", "runs_on:"))
    run = subprocess.run([*CHECK, *map(str, WORKFLOWS), str(broken)], capture_output=True, text=True)
    assert run.returncode == 1 and "Schema validation errors were encountered" in run.stdout, run.stdout + run.stderr
    named = {p.name for p in [*WORKFLOWS, broken] if str(p) in run.stdout}
    assert named == {"broken.yml"}, run.stdout


def test_workflows_run_only_nox_sessions_that_exist() -> None:
    sessions = nox_sessions()
    assert {"build-stack", "tests", "lint", "lock", "publish"} <= sessions
    called = {name for p in WORKFLOWS for name in re.findall(r"nox -s ([\w-]+)", p.read_text())}
    assert called and called <= sessions, called - sessions


@pytest.mark.skipif(shutil.which("actionlint") is None, reason="actionlint is not installed here (no package for it)")
def test_actionlint_finds_nothing() -> None:
    run = subprocess.run(["actionlint", *map(str, WORKFLOWS)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
