"""File locks under the cache's locks/<name>.lock (flock): one build, process or thread, at a time
does a given stage, download or bootstrap; every cache command holds the cache shared while gc holds
it alone."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


class FileLocks:
    """The locks under root (the cache's locks/), by name."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @contextlib.contextmanager
    def exclusive(self, name: str) -> Iterator[None]:
        """Held by one build (process or thread) at a time: two builds at once each do a piece of work once."""
        with self._flock(name, fcntl.LOCK_EX):
            yield

    @contextlib.contextmanager
    def shared(self, name: str) -> Iterator[None]:
        """Held by any number of processes at once, while none holds alone(name)."""
        with self._flock(name, fcntl.LOCK_SH):
            yield

    @contextlib.contextmanager
    def alone(self, name: str) -> Iterator[bool]:
        """Try to hold name exclusively, without waiting: yields whether it is held."""
        path = self.root / f"{name}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def _flock(self, name: str, how: int) -> Iterator[None]:
        path = self.root / f"{name}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as handle:
            fcntl.flock(handle, how)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
