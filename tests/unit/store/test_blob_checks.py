"""A cache blob linked into a context is checked against its name, hashed again only when its file
status moved since it was last found intact (bench/RESULTS.md: each installer was read again for
every context, about a second per GiB on the critical path)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from builder.store import cache as cache_module
from builder.store.cache import INTACT, Cache
from builder.store.files import sha256_file


def _blob(tmp_path: Path, data: bytes = b"installer\n") -> tuple[Cache, Path]:
    cache = Cache(tmp_path / "cache")
    (tmp_path / "package").write_bytes(data)
    return cache, cache.blob(cache.add_file(tmp_path / "package"))


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    hashed: list[Path] = []

    def counted(path: Path) -> str:
        hashed.append(path)
        return sha256_file(path)

    monkeypatch.setattr(cache_module, "sha256_file", counted)
    return hashed


def test_a_blob_found_intact_is_not_read_again_while_its_status_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, blob = _blob(tmp_path)
    monkeypatch.setattr(cache_module, "SETTLED_SECONDS", 0.0)
    hashed = _counting(monkeypatch)
    assert cache.blob_intact(blob) and cache.blob_intact(blob)
    assert hashed == [blob]


def test_a_blob_rewritten_with_its_size_and_mtime_kept_is_read_again_and_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, blob = _blob(tmp_path)
    monkeypatch.setattr(cache_module, "SETTLED_SECONDS", 0.0)
    assert cache.blob_intact(blob)
    before = blob.stat()
    time.sleep(0.05)  # past the clock tick the check saw
    blob.write_bytes(b"INSTALLER\n")  # the same size
    os.utime(blob, ns=(before.st_atime_ns, before.st_mtime_ns))  # sets mtime back; the ctime moves on
    assert not cache.blob_intact(blob)


def test_a_status_as_fresh_as_the_clock_tick_is_not_remembered(tmp_path: Path) -> None:
    """A write in the tick the check saw would leave the status as it was: such a status is hashed
    again next time rather than trusted."""
    cache, blob = _blob(tmp_path)
    assert cache.blob_intact(blob)
    assert cache.records.read(INTACT, blob.name) is None
