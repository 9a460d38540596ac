"""Local source trees: which files belong to them, and their content hash."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from builder.inputs.git import SourceError, git
from builder.model.errors import InputError

# Never part of a component's pinned tree, even outside a git checkout.
ALWAYS_IGNORED = {".git", "__pycache__", "build", ".pytest_cache", ".mypy_cache"}


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


def _refuse_special(root: Path, rel: Path) -> None:
    """A FIFO would hang a read and a device or socket has no content: refused by name."""
    mode = (root / rel).lstat().st_mode
    for test, kind in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device")):
        if test(mode) or (kind == "a device" and stat.S_ISBLK(mode)):
            raise InputError(f"{root / rel} is {kind}: a source tree holds files, links and directories only")


def tree_files(root: Path) -> list[Path]:
    # git leaves special files out of its listing without a word; they are refused here instead.
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in ALWAYS_IGNORED]
        for name in filenames:
            _refuse_special(root, Path(dirpath, name).relative_to(root))
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
