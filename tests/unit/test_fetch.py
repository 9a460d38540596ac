"""Downloads through a loopback HTTP server that misbehaves before it works."""

import hashlib
import http.server
import threading
from pathlib import Path

import pytest

from builder.store.cache import Cache
from builder.store.http import DownloadError, HttpClient, Progress, redact
from tests.helpers import http_server

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB
SHA = hashlib.sha256(PAYLOAD).hexdigest()


class Flaky:
    """Fails the first requests (500, connection reset, truncated body), then serves with Range support."""

    def __init__(self, script: list[str]) -> None:
        self.script = list(script)
        self.ranges: list[str | None] = []
        self.lock = threading.Lock()

    def __call__(self, h: http.server.BaseHTTPRequestHandler) -> None:
        with self.lock:
            step = self.script.pop(0) if self.script else "ok"
            self.ranges.append(h.headers.get("Range"))
        if step == "500":
            h.send_response(500)
            h.send_header("Content-Length", "0")
            h.end_headers()
        elif step == "reset":
            h.close_connection = True
            h.connection.shutdown(2)
        elif step == "truncate":
            h.send_response(200)
            h.send_header("Content-Length", str(len(PAYLOAD)))
            h.end_headers()
            h.wfile.write(PAYLOAD[: len(PAYLOAD) // 3])
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(2)
        else:
            start = 0
            if rng := h.headers.get("Range"):
                start = int(rng.removeprefix("bytes=").split("-")[0])
            body = PAYLOAD[start:]
            h.send_response(206 if start else 200)
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(body)


def client() -> HttpClient:
    return HttpClient(attempts=6, timeout=5, backoff=0.01)


def blobs(cache: Cache) -> list[Path]:
    return [p for p in cache.root.rglob("*") if p.is_file()]


def test_retries_resets_and_500s_then_resumes(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    flaky = Flaky(["500", "reset", "500", "truncate"])
    with http_server(flaky) as url:
        sha = client().download(f"{url}/Ascend-cann-toolkit.run", cache, SHA)
    assert sha == SHA
    assert cache.blob(SHA).read_bytes() == PAYLOAD
    # The request after the truncated transfer asked only for the rest.
    resumed_at = int((flaky.ranges[-1] or "bytes=0-").removeprefix("bytes=").rstrip("-"))
    assert 0 < resumed_at <= len(PAYLOAD) // 3
    assert blobs(cache) == [cache.blob(SHA)]


def test_wrong_sha256_leaves_nothing(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    with http_server(Flaky([])) as url, pytest.raises(DownloadError) as info:
        client().download(f"{url}/x.run", cache, "0" * 64)
    assert f"sha256 mismatch: expected {'0' * 64}, got {SHA}" in str(info.value)
    assert blobs(cache) == []


def test_gives_up_after_the_attempts(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    with http_server(Flaky(["500"] * 10)) as url, pytest.raises(DownloadError, match="after 6 attempts"):
        client().download(f"{url}/x.run", cache, SHA)
    assert blobs(cache) == []


def test_404_is_not_retried(tmp_path: Path) -> None:
    calls = []

    def missing(h: http.server.BaseHTTPRequestHandler) -> None:
        calls.append(h.path)
        h.send_response(404)
        h.send_header("Content-Length", "0")
        h.end_headers()

    with http_server(missing) as url, pytest.raises(DownloadError, match="HTTP 404"):
        client().download(f"{url}/x.run", Cache(tmp_path), SHA)
    assert len(calls) == 1


def test_cached_blob_is_not_downloaded_again(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    flaky = Flaky([])
    with http_server(flaky) as url:
        client().download(f"{url}/x.run", cache, SHA)
        client().download(f"{url}/x.run", cache, SHA)
    assert len(flaky.ranges) == 1


def test_credentials_are_redacted() -> None:
    assert redact("https://bob:s3cret@repo.internal:8443/a.zip") == "https://repo.internal:8443/a.zip"


def test_progress_lines_are_throttled() -> None:
    lines: list[str] = []
    progress = Progress("Ascend-cann-toolkit.zip", lines.append, every=0.0)
    progress(50_000_000, 200_000_000)
    progress(100_000_000, None)
    assert lines == ["  Ascend-cann-toolkit.zip: 25% of 200 MB", "  Ascend-cann-toolkit.zip: 100 MB"]
    quiet = Progress("x", lines.append, every=3600)
    quiet(1, 2)
    assert len(lines) == 2
