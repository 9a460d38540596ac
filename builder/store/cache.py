"""The cache (`$STACKBUILD_CACHE`, default ~/.cache/stackbuild): the one owner of every path under it.

blobs/sha256/<hex>        downloads, generated packages, base tarballs (content-addressed)
tmp/                      partial files; a blob enters blobs/ only once its sha256 is checked (each
                          directory flocked by its process while in use: sweep_scratch removes the rest)
records/<kind>/.../*.json small records (base bootstraps, last builds, smoke passes)
locks/<name>.lock         file locks: one build at a time does a given stage, download or bootstrap
git/<url hash>.git        mirrors of git sources
jinja/                    compiled templates (kept by builder.plan.templating, loaded only if private)
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from builder.model.errors import StackbuildError
from builder.store.files import sha256_file, write_atomic


class CacheError(StackbuildError):
    pass


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


def default_root() -> Path:
    if env := os.environ.get("STACKBUILD_CACHE"):
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "stackbuild"


class Cache:
    """The cache at root: the caller says where (the CLI from STACKBUILD_CACHE, through default_root)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    # -- blobs ---------------------------------------------------------------------------

    def blob(self, sha256: str) -> Path:
        return self.root / "blobs" / "sha256" / sha256

    def has(self, sha256: str) -> bool:
        return self.blob(sha256).is_file()

    def holds_blob(self, path: Path) -> bool:
        """Whether path is one of this cache's blobs (named by its sha256)."""
        return path.parent == self.root / "blobs" / "sha256"

    @contextlib.contextmanager
    def temp_dir(self) -> Iterator[Path]:
        """A scratch directory on the cache's file system (so a finished file is renamed in, not copied),
        flocked (shared) until it is removed: a killed process's is told from a live one's by the lock
        alone (sweep_scratch), nothing is written beside or into it."""
        tmp_root = self.root / "tmp"
        tmp_root.mkdir(parents=True, exist_ok=True)
        while True:
            made = tempfile.TemporaryDirectory(dir=tmp_root)
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

    def add_file(self, source: Path, expected_sha256: str | None = None) -> str:
        """Copy a local file into the cache after checking it; its sha256."""
        with self.temp_dir() as tmp:
            part = tmp / "part"
            shutil.copyfile(source, part)
            return self.add_part(part, expected_sha256, str(source))

    def add_part(self, part: Path, expected: str | None, what: str) -> str:
        """Move a finished file (from temp_dir) into the cache if its sha256 is the expected one."""
        actual = sha256_file(part)
        if expected and actual != expected:
            part.unlink()
            raise CacheError(f"{what}: sha256 mismatch: expected {expected}, got {actual}")
        target = self.blob(actual)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(part, target)
        return actual

    def scratch_entries(self) -> list[Path]:
        """What temp_dir made and no live process holds (its process was killed), and anything else in
        tmp/ a day old."""
        tmp_root = self.root / "tmp"
        entries = sorted(tmp_root.iterdir()) if tmp_root.is_dir() else []
        found = []
        for entry in entries:
            with _abandoned(entry) as gone:
                if gone:
                    found.append(entry)
        return found

    def remove_scratch(self, entry: Path) -> bool:
        """Remove a scratch entry if it is still abandoned (checked again under its lock); whether it was."""
        with _abandoned(entry) as gone:
            if gone:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
            return gone

    def sweep_scratch(self) -> None:
        """Remove what killed processes left in tmp/ (a kill -9 unwinds nothing): one listing of tmp/."""
        tmp_root = self.root / "tmp"
        with contextlib.suppress(FileNotFoundError):
            for entry in tmp_root.iterdir():
                self.remove_scratch(entry)

    def blob_files(self) -> list[Path]:
        root = self.root / "blobs" / "sha256"
        return sorted(p for p in root.iterdir() if p.is_file()) if root.is_dir() else []

    # -- records -------------------------------------------------------------------------

    def _record(self, kind: str, *names: str) -> Path:
        return self.root.joinpath("records", kind, *names[:-1], f"{names[-1]}.json")

    def read_record(self, kind: str, *names: str) -> dict[str, Any] | None:
        """A record written by write_record, or None (missing or unreadable: treated as never written)."""
        try:
            data = json.loads(self._record(kind, *names).read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def write_record(self, data: dict[str, Any], kind: str, *names: str) -> None:
        write_atomic(self._record(kind, *names), json.dumps(data, indent=1, sort_keys=True))

    def records(self, kind: str) -> dict[str, dict[str, Any]]:
        """Every readable record of a kind, by its name below the kind ("stack/arch/name")."""
        root = self.root / "records" / kind
        found = {}
        for path in sorted(root.rglob("*.json")):
            if (data := self.read_record(kind, *path.relative_to(root).with_suffix("").parts)) is not None:
                found[path.relative_to(root).with_suffix("").as_posix()] = data
        return found

    def remove_record(self, kind: str, name: str) -> None:
        self._record(kind, *name.split("/")).unlink(missing_ok=True)

    # -- locks ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def lock(self, name: str) -> Iterator[None]:
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
        path = self.root / "locks" / f"{name}.lock"
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
        path = self.root / "locks" / f"{name}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as handle:
            fcntl.flock(handle, how)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    # -- git mirrors ---------------------------------------------------------------------

    def git_mirror(self, url: str) -> Path:
        return self.root / "git" / f"{hashlib.sha256(url.encode()).hexdigest()[:16]}.git"

    def git_mirrors(self) -> list[Path]:
        return sorted((self.root / "git").glob("*.git"))


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
