"""Repositories as an upstream serves them, and a host file no source may bring into the cache."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import git as run_git
from tests.helpers import make_repo

SECRET = "the host's secret\n"


def bare_repo(base: Path) -> tuple[Path, str]:
    """A bare repository with one commit on main; its path and the commit."""
    commit = make_repo(base / "work")
    run_git("clone", "-q", "--bare", str(base / "work"), str(base / "repo.git"), cwd=base)
    return base / "repo.git", commit


def git_commit(work: Path) -> str:
    return run_git("rev-parse", "HEAD", cwd=work)
