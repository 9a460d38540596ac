"""Downloads through a loopback HTTP server that misbehaves before it works."""

import hashlib
import http.server
import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from builder.inputs import packages
from builder.inputs.site import SiteConfig
from builder.model.errors import StackbuildError
from builder.model.retry import RetryPolicy
from builder.store.cache import Cache
from builder.store.http import DownloadError, HttpClient, Progress, SizeLimit, redact
from tests.helpers import free_port, http_server

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB
SHA = hashlib.sha256(PAYLOAD).hexdigest()
LIMIT = SizeLimit(SiteConfig().download_limit)  # the site's default


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
            if start:
                h.send_header("Content-Range", f"bytes {start}-{len(PAYLOAD) - 1}/{len(PAYLOAD)}")
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(body)


def client() -> HttpClient:
    return HttpClient(RetryPolicy(attempts=6, backoff=0.01), timeout=5)


def blobs(cache: Cache) -> list[Path]:
    return [p for p in cache.root.rglob("*") if p.is_file()]


def test_retries_resets_and_500s_then_resumes(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    flaky = Flaky(["500", "reset", "500", "truncate"])
    with http_server(flaky) as url:
        sha = client().download(f"{url}/Ascend-cann-toolkit.run", cache, SHA, limit=LIMIT)
    assert sha == SHA
    assert cache.blob(SHA).read_bytes() == PAYLOAD
    # The request after the truncated transfer asked only for the rest.
    resumed_at = int((flaky.ranges[-1] or "bytes=0-").removeprefix("bytes=").rstrip("-"))
    assert 0 < resumed_at <= len(PAYLOAD) // 3
    assert blobs(cache) == [cache.blob(SHA)]


def test_wrong_sha256_leaves_nothing(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    with http_server(Flaky([])) as url, pytest.raises(DownloadError) as info:
        client().download(f"{url}/x.run", cache, "0" * 64, limit=LIMIT)
    assert f"sha256 mismatch: expected {'0' * 64}, got {SHA}" in str(info.value)
    assert blobs(cache) == []


def test_gives_up_after_the_attempts(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    with http_server(Flaky(["500"] * 10)) as url, pytest.raises(DownloadError, match="after 6 attempts"):
        client().download(f"{url}/x.run", cache, SHA, limit=LIMIT)
    assert blobs(cache) == []


def test_404_is_not_retried(tmp_path: Path) -> None:
    calls = []

    def missing(h: http.server.BaseHTTPRequestHandler) -> None:
        calls.append(h.path)
        h.send_response(404)
        h.send_header("Content-Length", "0")
        h.end_headers()

    with http_server(missing) as url, pytest.raises(DownloadError, match="HTTP 404"):
        client().download(f"{url}/x.run", Cache(tmp_path), SHA, limit=LIMIT)
    assert len(calls) == 1


def test_cached_blob_is_not_downloaded_again(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    flaky = Flaky([])
    with http_server(flaky) as url:
        client().download(f"{url}/x.run", cache, SHA, limit=LIMIT)
        client().download(f"{url}/x.run", cache, SHA, limit=LIMIT)
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


class BadResume:
    """Cuts the first transfer short, then answers the resume wrongly (`how`), then serves properly."""

    def __init__(self, how: str) -> None:
        self.how = how
        self.requests: list[str | None] = []

    def __call__(self, h: http.server.BaseHTTPRequestHandler) -> None:
        rng = h.headers.get("Range")
        self.requests.append(rng)
        if len(self.requests) == 1:
            h.send_response(200)
            h.send_header("Content-Length", str(len(PAYLOAD)))
            h.end_headers()
            h.wfile.write(PAYLOAD[: len(PAYLOAD) // 2])
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(2)
        elif rng and self.how == "206-whole-body":
            h.send_response(206)
            h.send_header("Content-Range", f"bytes 0-{len(PAYLOAD) - 1}/{len(PAYLOAD)}")
            h.send_header("Content-Length", str(len(PAYLOAD)))
            h.end_headers()
            h.wfile.write(PAYLOAD)
        elif rng and self.how == "416":
            h.send_response(416)
            h.send_header("Content-Length", "0")
            h.end_headers()
        else:
            h.send_response(200)
            h.send_header("Content-Length", str(len(PAYLOAD)))
            h.end_headers()
            h.wfile.write(PAYLOAD)


@pytest.mark.parametrize("how", ["206-whole-body", "416"])
def test_a_wrong_resume_restarts_instead_of_pinning_a_wrong_file(tmp_path: Path, how: str) -> None:
    """Without a sha256 to check against (pinning), a bad resume must not end up in the cache."""
    cache = Cache(tmp_path / "cache")
    server = BadResume(how)
    with http_server(server) as url:
        sha = client().download(f"{url}/x.run", cache, limit=LIMIT)
    assert sha == SHA and cache.blob(SHA).read_bytes() == PAYLOAD
    assert server.requests[-1] is None  # started again from byte 0
    assert blobs(cache) == [cache.blob(SHA)]


@pytest.mark.parametrize("answer", ["204", "no-length"])
def test_no_content_or_no_length_is_not_pinned(tmp_path: Path, answer: str) -> None:
    def serve(h: http.server.BaseHTTPRequestHandler) -> None:
        if answer == "204":
            h.send_response(204)
            h.end_headers()
            return
        h.send_response(200)
        h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(b"48 bytes of an error page, not a CANN package..")
        h.close_connection = True

    cache = Cache(tmp_path / "cache")
    with http_server(serve) as url, pytest.raises(DownloadError) as info:
        client().download(f"{url}/Ascend-cann-toolkit.zip", cache, limit=LIMIT)
    assert ("HTTP 204 is not a file" if answer == "204" else "sends no Content-Length") in str(info.value)
    assert blobs(cache) == []


def test_file_urls_are_copied_and_checked(tmp_path: Path) -> None:
    local = tmp_path / "mirror" / "Ascend cann.run"
    local.parent.mkdir()
    local.write_bytes(PAYLOAD)
    cache = Cache(tmp_path / "cache")
    assert client().download(f"file://{local.parent}/Ascend%20cann.run", cache, SHA, limit=LIMIT) == SHA
    with pytest.raises(DownloadError, match="sha256 mismatch"):
        client().download(f"file://{local}".replace("%20", " "), Cache(tmp_path / "other"), "0" * 64, limit=LIMIT)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs for the full-disk case needs root")
def test_a_full_disk_during_a_download_leaves_nothing_and_the_retry_works(tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(small)], check=True)
    try:
        cache = Cache(small / "cache")
        with http_server(Flaky([])) as url, pytest.raises(DownloadError) as info:
            client().download(f"{url}/Ascend-cann-toolkit.run", cache, SHA, limit=LIMIT)
        assert "cannot write into the cache" in str(info.value) and "No space left on device" in str(info.value)
        assert blobs(cache) == []
    finally:
        subprocess.run(["umount", str(small)], check=True)
    with http_server(Flaky([])) as url:
        assert client().download(f"{url}/Ascend-cann-toolkit.run", Cache(tmp_path / "big"), SHA, limit=LIMIT) == SHA


def test_a_toolkit_package_found_nowhere_is_one_line_naming_installer_dirs_and_how_to_supply_it(
    tmp_path: Path,
) -> None:
    def missing(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(404)
        h.send_header("Content-Length", "0")
        h.end_headers()

    shelf = tmp_path / "cann"
    shelf.mkdir()
    file = "Ascend-cann-toolkit_8.5.0_linux-x86_64.zip"
    for site, where in (
        (SiteConfig(), "site configuration: none found, e.g. ./stackbuild.site.yaml; installer_dirs: none listed"),
        (SiteConfig(installer_dirs=[shelf], path=tmp_path / "site.yaml"), f"installer_dirs: {shelf}"),
    ):
        with http_server(missing) as url, pytest.raises(StackbuildError) as err:
            packages.download(f"{url}/{file}", file, SHA, site, Cache(tmp_path / "cache"), print, "huawei", size=None)
        message = str(err.value)
        assert "\n" not in message
        assert message.startswith(f"{file} is in no installer_dirs directory (") and where in message, message
        assert f"{file}: HTTP 404" in message and "`installer_dirs: [DIR]`" in message, message


def test_a_refused_connection_is_said_in_a_few_words(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9"  # the discard port: nothing listens there
    with pytest.raises(DownloadError) as err:
        HttpClient(RetryPolicy(attempts=2, backoff=0.01), timeout=5).download(
            f"{url}/x.run", Cache(tmp_path), SHA, limit=LIMIT
        )
    assert str(err.value) == f"{url}/x.run: Connection refused (after 2 attempts)"


def test_a_toolkit_package_with_another_sha256_is_said_as_such_not_as_missing(tmp_path: Path) -> None:
    with http_server(Flaky([])) as url, pytest.raises(StackbuildError) as err:
        packages.download(
            f"{url}/t.zip", "t.zip", "0" * 64, SiteConfig(), Cache(tmp_path / "cache"), print, "huawei", size=None
        )
    assert "sha256 mismatch" in str(err.value) and "installer_dirs" not in str(err.value), err.value


def test_a_hosts_own_header_does_not_follow_a_redirect_to_another_host(tmp_path: Path) -> None:
    got: dict[str, list[str | None]] = {"first": [], "second": []}

    def second(h: http.server.BaseHTTPRequestHandler) -> None:
        got["second"].append(h.headers.get("X-Team"))
        Flaky([])(h)

    with http_server(second) as other:

        def first(h: http.server.BaseHTTPRequestHandler) -> None:
            got["first"].append(h.headers.get("X-Team"))
            h.send_response(302)
            h.send_header("Location", f"{other}/x.run")
            h.send_header("Content-Length", "0")
            h.end_headers()

        with http_server(first) as url:
            headers = {url.removeprefix("http://"): {"X-Team": "npu"}}
            HttpClient(RetryPolicy(attempts=2, backoff=0.01), timeout=5, headers=headers).download(
                f"{url}/x.run",
                Cache(tmp_path),
                SHA,
                limit=LIMIT,
            )
    assert got == {"first": ["npu"], "second": [None]}


def _answering(status: int) -> Callable[[http.server.BaseHTTPRequestHandler], None]:
    def answer(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        h.send_header("Content-Length", "0")
        h.end_headers()

    return answer


def test_only_a_host_that_gives_no_answer_is_told_apart_from_a_wrong_url(tmp_path: Path) -> None:
    """No connection and 5xx are no answer (the lock records the part unresolved); 404, and 501 for a
    method the host does not implement, are answers (a wrong URL stays an error where it is used)."""
    from builder.store.http import NoAnswer

    with http_server(_answering(503)) as down, http_server(_answering(404)) as missing:
        with http_server(_answering(501)) as no_head:
            assert client().no_answer(f"{no_head}/x") is None
        assert client().no_answer(f"{missing}/x") is None
        assert "HTTP 503" in str(client().no_answer(f"{down}/x"))
        with pytest.raises(NoAnswer, match="HTTP 503"):
            client().download(f"{down}/x.run", Cache(tmp_path), SHA, limit=LIMIT)
        with pytest.raises(DownloadError, match="HTTP 404") as raised:
            client().download(f"{missing}/x.run", Cache(tmp_path), SHA, limit=LIMIT)
        assert not isinstance(raised.value, NoAnswer)
    dead = f"http://127.0.0.1:{free_port()}/x"
    assert "refused" in str(client().no_answer(dead)).lower()
    with pytest.raises(NoAnswer):
        client().download(dead, Cache(tmp_path), SHA, limit=LIMIT)
