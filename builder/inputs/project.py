"""Where a stack's definition comes from: the git checkout holding its manifest (origin URL and
commit), for the build's provenance; never in an image, whose bytes only the lock decides."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from builder.inputs.git import SourceError, checked_commit, git
from builder.model.errors import InputError
from builder.store.http import redact


@dataclass(frozen=True)
class Origin:
    source: str | None = None  # the checkout's origin URL, credentials and query left out
    revision: str | None = None  # its HEAD commit


def origin_of(directory: Path) -> Origin:
    """The checkout directory is in, or an empty Origin when it is in none (or git is missing)."""
    return Origin(_git(directory, "remote", "get-url", "origin"), _git(directory, "rev-parse", "HEAD"))


def _git(directory: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(directory), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = done.stdout.strip()
    if done.returncode != 0 or not value:
        return None
    return redact(value) if "://" in value else value


@dataclass(frozen=True)
class Clone:
    """A fresh clone of the checkout: another path, another origin URL."""

    top: Path  # the clone's top level
    origin: str  # its origin: the checkout, as a file:// URL
    commit: str  # what it has checked out
    changes: bool  # the checkout's uncommitted changes copied over it


def toplevel(directory: Path) -> Path | None:
    """The top level of the git checkout directory is in (None: in none)."""
    found = _git(directory, "rev-parse", "--show-toplevel")
    return Path(found) if found else None


def clone_checkout(top: Path, dest: Path, at: str | None) -> Clone:
    """The checkout at top cloned to dest, at the commit `at` names (else at HEAD, with the working
    tree's uncommitted changes copied over it: a build of the checkout reads those)."""
    try:
        found = git("rev-parse", "--verify", "--end-of-options", f"{at or 'HEAD'}^{{commit}}", cwd=top)
    except SourceError as err:
        raise InputError(f"--at {at}: no such commit in {top} ({err}): give a commit, branch or tag of it") from err
    commit = checked_commit(found.strip(), "--at")
    git("clone", "--quiet", "--no-hardlinks", "--no-checkout", "--", str(top), str(dest))
    origin = top.resolve().as_uri()
    git("remote", "set-url", "origin", origin, cwd=dest)
    git("checkout", "--quiet", "--detach", commit, cwd=dest)
    changes = at is None and bool(git("status", "--porcelain", cwd=top).strip())
    if changes:
        _copy_working_tree(top, dest)
    return Clone(dest, origin, commit, changes)


def _copy_working_tree(top: Path, dest: Path) -> None:
    """dest's files replaced by the working tree's, as they are now: every file git lists there and
    does not ignore (staged or not, renamed, untracked), and nothing else. dest is emptied first (but
    its .git), so nothing of HEAD stays and no copy goes through a link HEAD had."""
    for entry in dest.iterdir():
        if entry.name == ".git":
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=top).split("\0")
    for name in filter(None, listed):
        source, target = top / name, dest / name
        if source.is_dir() and not source.is_symlink():
            continue  # a submodule's gitlink: its own checkout
        if source.is_symlink() or source.exists():  # listed but deleted in the working tree: gone
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)
