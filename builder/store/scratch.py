"""Scratch directories under the cache's tmp/, on the cache's file system (a finished file is renamed
into blobs/, not copied): each flocked (shared) by the process using it until it is removed, so what
a killed process left (a kill -9 unwinds nothing) is told from a live one's by the lock alone and
swept; a process interrupted removes its own as it exits without unwinding its threads."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

# What temp_dir did not make (it locks each directory it makes) is a dead process's once this old.
STRAY_AGE = 24 * 3600
# This process's temp_dir directories in use: an interrupted command removes them before it exits at
# once (its other threads are not unwound).
_LIVE: set[Path] = set()
_LIVE_GUARD = threading.Lock()


def remove_live_scratch() -> None:
    """Remove this process's temp_dir directories still in use, as it exits without unwinding its threads."""
    with _LIVE_GUARD:
        live = list(_LIVE)
    for path in live:
        shutil.rmtree(path, ignore_errors=True)


class ScratchSpace:
    """The scratch directories under root (the cache's tmp/)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @contextlib.contextmanager
    def temp_dir(self) -> Iterator[Path]:
        """A scratch directory on the cache's file system (so a finished file is renamed in, not copied),
        flocked (shared) until it is removed: a killed process's is told from a live one's by the lock
        alone (sweep), nothing is written beside or into it."""
        self.root.mkdir(parents=True, exist_ok=True)
        while True:
            made = tempfile.TemporaryDirectory(dir=self.root)
            held = os.open(made.name, os.O_RDONLY | os.O_DIRECTORY)
            fcntl.flock(held, fcntl.LOCK_SH)
            if os.fstat(held).st_nlink:
                break
            # A sweep took it between its making and its lock: another one.
            os.close(held)
            made.cleanup()
        path = Path(made.name)
        with _LIVE_GUARD:
            _LIVE.add(path)
        try:
            yield path
        finally:
            try:
                made.cleanup()
            finally:
                os.close(held)  # only once it is gone: until then it is never a sweep's
                with _LIVE_GUARD:
                    _LIVE.discard(path)

    def abandoned(self) -> list[Path]:
        """What temp_dir made and no live process holds (its process was killed), and anything else in
        tmp/ a day old."""
        entries = sorted(self.root.iterdir()) if self.root.is_dir() else []
        found = []
        for entry in entries:
            with _abandoned(entry) as gone:
                if gone:
                    found.append(entry)
        return found

    def remove(self, entry: Path) -> bool:
        """Remove a scratch entry if it is still abandoned (checked again under its lock); whether it was."""
        with _abandoned(entry) as gone:
            if gone:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
            return gone

    def sweep(self) -> None:
        """Remove what killed processes left in tmp/ (a kill -9 unwinds nothing): one listing of tmp/."""
        with contextlib.suppress(FileNotFoundError):
            for entry in self.root.iterdir():
                self.remove(entry)


@contextlib.contextmanager
def _abandoned(entry: Path) -> Iterator[bool]:
    """Whether no live process holds entry (a temp_dir directory whose lock is free, or anything else
    a day old); a directory stays locked (exclusively) while the context lasts, so no process takes it."""
    held, stale = None, False
    try:
        if entry.is_symlink() or not entry.is_dir():
            stale = time.time() - entry.lstat().st_mtime > STRAY_AGE
        else:
            held = os.open(entry, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:  # removed meanwhile, or not ours to open: left alone
        pass
    if held is None:
        yield stale
        return
    try:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            stale = False
        else:
            stale = True
        yield stale
    finally:
        os.close(held)
