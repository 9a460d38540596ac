"""Pinning component sources: git refs to commits, local trees to content hashes."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path

from builder.errors import StackbuildError
from builder.fetch import redact

COMMIT = re.compile(r"^[0-9a-f]{40}$")
# Never part of a component's pinned tree, even outside a git checkout.
ALWAYS_IGNORED = {".git", "__pycache__", "build", ".pytest_cache", ".mypy_cache"}


class SourceError(StackbuildError):
    pass


def git(*args: str, cwd: Path | None = None, timeout: float = 120) -> str:
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="true", LC_ALL="C")
    try:
        run = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError as err:
        raise SourceError("git is not installed (run `python -m builder.hostsetup`)") from err
    except subprocess.TimeoutExpired as err:
        raise SourceError(f"git {args[0]} timed out after {timeout:.0f}s") from err
    if run.returncode != 0:
        raise SourceError(run.stderr.strip().splitlines()[-1] if run.stderr.strip() else f"git {args[0]} failed")
    return run.stdout


def resolve_ref(url: str, ref: str) -> str:
    """The commit a branch or tag points at (git ls-remote; any transport git speaks)."""
    if COMMIT.match(ref):
        return ref
    try:
        out = git("ls-remote", "--", url, ref, f"refs/heads/{ref}", f"refs/tags/{ref}", f"refs/tags/{ref}^{{}}")
    except SourceError as err:
        raise SourceError(f"{redact(url)}: cannot list refs: {err}") from err
    refs: dict[str, str] = {}
    for line in out.splitlines():
        commit, _, name = line.partition("\t")
        refs[name] = commit
    for name in (f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}", f"refs/heads/{ref}", ref):
        if name in refs:
            return refs[name]
    raise SourceError(f"{redact(url)}: no branch or tag named '{ref}'")


def _listed_files(root: Path) -> list[Path]:
    """Files of a tree: git's view (tracked + untracked, not ignored) inside a checkout."""
    try:
        out = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ".", cwd=root)
        names = [n for n in out.split("\0") if n]
        return sorted(Path(n) for n in names if (root / n).is_file() or (root / n).is_symlink())
    except SourceError:
        files = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in ALWAYS_IGNORED)
            files += [Path(dirpath, f).relative_to(root) for f in filenames]
        return sorted(files)


def tree_files(root: Path) -> list[Path]:
    return [p for p in _listed_files(root) if not ALWAYS_IGNORED.intersection(p.parts)]


def tree_hash(root: Path) -> str:
    """sha256 over the tree's paths, executable bits, symlink targets and contents."""
    if not root.is_dir():
        raise SourceError(f"{root}: not a directory")
    digest = hashlib.sha256()
    for rel in tree_files(root):
        path = root / rel
        if path.is_symlink():
            kind, data = "l", os.readlink(path).encode()
        else:
            kind, data = ("x" if os.access(path, os.X_OK) else "f"), path.read_bytes()
        digest.update(f"{rel.as_posix()}\0{kind}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()
