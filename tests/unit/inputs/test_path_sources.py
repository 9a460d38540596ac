"""Path sources stay inside the manifest's repository (a monorepo's ../src/x is fine), a special file in
their tree is refused by name, and git never runs the tree's own configuration."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from tests.helpers import git
from tests.unit.conftest import cli


@pytest.mark.parametrize("path", ["../../etc", "/etc", "app/../../.."])
def test_path_sources_cannot_leave_the_repository(project: Path, capsys: pytest.CaptureFixture[str], path: str) -> None:
    manifest = project / "stacks" / "demo.yaml"
    manifest.write_text(manifest.read_text().replace("source: {path: app}", f"source: {{path: '{path}'}}", 1))
    code, _, err = cli(capsys, project, "lock", "demo")
    assert code == 2
    assert "components[0].source.path: " in err
    assert "outside" in err or "absolute" in err


def test_monorepo_paths_inside_the_repository_are_fine(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "src" / "lib").mkdir(parents=True)
    (project / "src" / "lib" / "Makefile").write_text("all:\n")
    manifest = project / "stacks" / "demo.yaml"
    manifest.write_text(manifest.read_text().replace("source: {path: app}", "source: {path: ../src/lib}", 1))
    assert cli(capsys, project, "lock", "demo")[0] == 0


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_special_files_in_a_source_tree_are_refused_by_name(
    project: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    target = project / "stacks" / "app" / "special"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(target))
    code, _, err = cli(capsys, project, "lock", "demo")
    assert code == 2, err
    assert f"{target} is a {'FIFO' if kind == 'fifo' else 'socket'}" in err


def test_git_never_runs_a_source_trees_own_configuration(
    project: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    marker = tmp_path / "fsmonitor-ran"
    nested = project / "stacks" / "app"
    git("init", "-q", cwd=nested)
    git("config", "core.fsmonitor", f"touch {marker}; false", cwd=nested)
    for command in (["lock", "demo"], ["render", "demo"], ["lock", "--check", "demo"]):
        cli(capsys, project, *command)
    assert not marker.exists()
    subprocess.run(["git", "status"], cwd=nested, capture_output=True)  # plain git does run it: the test can fail
    assert marker.exists()
