"""No reader sees half a file: a file written while others read it is read whole or not at all, and a
truncated cache record counts as missing."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from builder.store.cache import Cache
from builder.store.files import write_atomic


def test_concurrent_lock_writes_never_show_a_reader_half_a_file(tmp_path: Path) -> None:
    path = tmp_path / "x.lock.json"
    texts = [json.dumps({"writer": n, "pad": "x" * 200_000}) for n in range(2)]
    write_atomic(path, texts[0])
    errors: list[str] = []

    def writer(text: str) -> None:
        for _ in range(60):
            write_atomic(path, text)

    def reader() -> None:
        for _ in range(300):
            if path.read_text() not in texts:
                errors.append("a reader saw a partial file")

    threads = [threading.Thread(target=writer, args=(t,)) for t in texts] + [threading.Thread(target=reader)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [p.name for p in tmp_path.iterdir()] == ["x.lock.json"]  # no temporary file left


def test_truncated_cache_record_counts_as_missing(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.records.write({"sha256": "a" * 64, "packages": {}}, "base", "k")
    record = next((tmp_path / "records").rglob("k.json"))
    record.write_text(record.read_text()[:10])
    assert cache.records.read("base", "k") is None
