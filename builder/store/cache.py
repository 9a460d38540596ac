"""The cache (`$STACKBUILD_CACHE`, default ~/.cache/stackbuild): the one owner of every path under it.

blobs/sha256/<hex>        downloads, generated packages, base tarballs (content-addressed)
tmp/                      partial files; a blob enters blobs/ only once its sha256 is checked (each
                          directory flocked by its process while in use: scratch.ScratchSpace.sweep
                          removes the rest)
records/<kind>/.../*.json small records (base bootstraps, last builds, smoke passes, blobs found
                          intact: records.RecordStore)
locks/<name>.lock         file locks: one build at a time does a given stage, download or bootstrap
                          (file_locks.FileLocks)
git/<url hash>.git        mirrors of git sources
jinja/                    compiled templates (kept by builder.plan.templating, loaded only if private)
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

from builder.model.errors import StackbuildError
from builder.store.file_locks import FileLocks
from builder.store.files import sha256_file
from builder.store.records import RecordStore
from builder.store.scratch import ScratchSpace


class CacheError(StackbuildError):
    pass


INTACT = "blob-checks"  # records of a blob's file status when its content was last found to be its name
# A file changed since it was checked is told by its status only if the change can be told from the
# check in time: the kernel dates files by a clock that advances in ticks, so a status is remembered
# only once its change time is older than this (git's "racy" index entries, the same rule).
SETTLED_SECONDS = 1.0


class Cache:
    """The cache at root: the caller says where (the CLI, from its settings).
    Its blobs and git mirrors are here; its scratch directories, records and file locks each have
    their own class."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.scratch = ScratchSpace(root / "tmp")
        self.records = RecordStore(root / "records")
        self.locks = FileLocks(root / "locks")

    # -- blobs ---------------------------------------------------------------------------

    def blob(self, sha256: str) -> Path:
        return self.root / "blobs" / "sha256" / sha256

    def has(self, sha256: str) -> bool:
        return self.blob(sha256).is_file()

    def holds_blob(self, path: Path) -> bool:
        """Whether path is one of this cache's blobs (named by its sha256)."""
        return path.parent == self.root / "blobs" / "sha256"

    def blob_intact(self, path: Path) -> bool:
        """Whether the blob at path holds the content its name says. Hashed again only when its
        (device, inode, size, mtime, ctime) differ from the last time it was found so: a write
        through a link changes its mtime and ctime, and no call sets a ctime back."""
        status = path.stat()
        seen = [status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns]
        if self.records.read(INTACT, path.name) == {"status": seen}:
            return True
        if sha256_file(path) != path.name:
            return False
        if time.time_ns() - status.st_ctime_ns > SETTLED_SECONDS * 1e9:
            self.records.write({"status": seen}, INTACT, path.name)
        return True

    def add_file(self, source: Path, expected_sha256: str | None = None) -> str:
        """Copy a local file into the cache after checking it; its sha256."""
        with self.scratch.temp_dir() as tmp:
            part = tmp / "part"
            shutil.copyfile(source, part)
            return self.add_part(part, expected_sha256, str(source))

    def add_part(self, part: Path, expected: str | None, what: str) -> str:
        """Move a finished file (from scratch.temp_dir) into the cache if its sha256 is the expected one."""
        actual = sha256_file(part)
        if expected and actual != expected:
            part.unlink()
            raise CacheError(f"{what}: sha256 mismatch: expected {expected}, got {actual}")
        target = self.blob(actual)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(part, target)
        return actual

    def blob_files(self) -> list[Path]:
        root = self.root / "blobs" / "sha256"
        return sorted(p for p in root.iterdir() if p.is_file()) if root.is_dir() else []

    # -- git mirrors ---------------------------------------------------------------------

    def git_mirror(self, url: str) -> Path:
        return self.root / "git" / f"{hashlib.sha256(url.encode()).hexdigest()[:16]}.git"

    def git_mirrors(self) -> list[Path]:
        return sorted((self.root / "git").glob("*.git"))
