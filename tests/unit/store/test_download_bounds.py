"""Downloads are bounded and leave nothing in the cache's tmp/: an endless body stops at the size the
lock records (else the site's download_limit), wherever a redirect led; SIGTERM unwinds as Ctrl-C
does; what a kill -9 left is swept at the next start and by gc, what a live process holds is not."""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from builder.cli.context import Context
from builder.lock import io as lock_io
from builder.model.retry import RetryPolicy
from builder.store.cache import Cache
from builder.store.http import DownloadError, HttpClient, SizeLimit
from tests.conftest import ROOT
from tests.fake_engine import FakeEngine
from tests.helpers import http_server, run_cli
from tests.unit.lock.test_lock import FETCHING

MiB = 1 << 20
# Where an endless body gives up by itself, so that code without a bound fails an assertion instead
# of filling the disk: far above what the bound and the socket buffers between let through.
CAP = 96 * MiB


class Endless:
    """200 with no Content-Length (or a false one), then bytes until the client goes or CAP is sent;
    counts what it sent. pause: seconds between chunks (a slow server)."""

    def __init__(self, length: int | None = None, pause: float = 0.0, status: int = 200, to: str = "") -> None:
        self.length, self.pause, self.status, self.to = length, pause, status, to
        self.sent = 0
        self.done = threading.Event()

    def __call__(self, h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(self.status)
        if self.to:
            h.send_header("Location", self.to)
        if self.length is not None:
            h.send_header("Content-Length", str(self.length))
        h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True
        chunk = b"\0" * (64 << 10)
        try:
            while self.sent < CAP:
                h.wfile.write(chunk)
                self.sent += len(chunk)
                if self.pause:
                    time.sleep(self.pause)
        except OSError:  # the client hung up: what the bound is for
            pass
        finally:
            self.done.set()

    def head(self, h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", "0")
        h.end_headers()


def client() -> HttpClient:
    return HttpClient(RetryPolicy(attempts=3, backoff=0.01), timeout=5)


def scratch(cache: Cache) -> list[Path]:
    tmp = cache.root / "tmp"
    return sorted(tmp.iterdir()) if tmp.is_dir() else []


def test_an_endless_body_stops_at_the_locked_size_at_once_and_leaves_nothing(tmp_path: Path) -> None:
    cache, server = Cache(tmp_path / "cache"), Endless()
    started = time.monotonic()
    with http_server(server, server.head) as url, pytest.raises(DownloadError) as info:
        client().download(f"{url}/include.zip", cache, "0" * 64, limit=SizeLimit(MiB, locked=True))
    assert time.monotonic() - started < 5
    assert str(info.value).startswith(f"{url}/include.zip: the lock records {MiB} bytes, the server sent more")
    assert "\n" not in str(info.value)
    server.done.wait(5)
    assert server.sent < MiB + 16 * MiB  # the locked size and what the sockets buffered: not CAP
    assert scratch(cache) == [] and not (cache.root / "blobs").exists()


def test_a_content_length_over_the_limit_is_refused_before_reading(tmp_path: Path) -> None:
    cache, server = Cache(tmp_path / "cache"), Endless(length=CAP)
    with http_server(server, server.head) as url, pytest.raises(DownloadError) as info:
        client().download(f"{url}/toolkit.zip", cache, limit=SizeLimit(MiB))
    assert str(info.value).startswith(
        f"{url}/toolkit.zip: over the site's download_limit of {MiB} bytes (a Content-Length of {CAP} bytes)"
    )
    server.done.wait(5)
    assert server.sent < 16 * MiB  # what the sockets buffered before the client hung up, never read
    assert scratch(cache) == []


def test_a_redirect_to_an_endless_body_elsewhere_counts_against_the_same_limit(tmp_path: Path) -> None:
    """The site's limit (no size locked) bounds the body a redirect leads to on another host, and
    the redirect's own body (endless too) is never read."""
    cache, target = Cache(tmp_path / "cache"), Endless()
    with http_server(target, target.head) as elsewhere:
        redirect = Endless(status=302, to=f"{elsewhere}/real.zip")
        with http_server(redirect, redirect.head) as url, pytest.raises(DownloadError) as info:
            client().download(f"{url}/x.zip?token=secret", cache, "0" * 64, limit=SizeLimit(2 * MiB))
        redirect.done.wait(5)
        target.done.wait(5)
    assert str(info.value).startswith(f"{url}/x.zip?<redacted>: over the site's download_limit of {2 * MiB} bytes")
    assert "secret" not in str(info.value)
    assert redirect.sent < 16 * MiB and target.sent < 2 * MiB + 16 * MiB
    assert scratch(cache) == []


def _project(tmp_path: Path, url: str) -> Path:
    root = tmp_path / "project"
    (root / "stacks" / "app").mkdir(parents=True)
    (root / "stacks" / "app" / "main.py").write_text("print('v1')\n")
    (root / "stacks" / "fetching.yaml").write_text(FETCHING.replace("URL", url))
    (tmp_path / "site.yaml").write_text("{}\n")
    return root


class Switch:
    """Serves payload until told to serve something else."""

    def __init__(self, payload: bytes) -> None:
        self.payload = payload
        self.instead: Endless | None = None

    def __call__(self, h: http.server.BaseHTTPRequestHandler) -> None:
        if self.instead is not None:
            self.instead(h)
            return
        h.send_response(200)
        h.send_header("Content-Length", str(len(self.payload)))
        h.end_headers()
        h.wfile.write(self.payload)


def test_vendor_stops_a_locked_fetch_that_streams_forever_at_its_locked_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STACKBUILD_SITE_CONFIG", str(tmp_path / "site.yaml"))
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))
    payload = b"a third-party archive"
    server = Switch(payload)
    with http_server(server) as url:
        root = _project(tmp_path, url)
        code, _, err = run_cli(capsys, "--root", str(root), "lock", "fetching")
        assert code == 0, err
        lock_file = root / "lockfiles" / "fetching.lock.json"
        (fetched,) = json.loads(lock_file.read_text())["components"][0]["fetched"]
        assert fetched["size"] == len(payload)
        # A lock made before sizes were recorded gets the size of the file it keeps when relocked.
        older = lock_io.read(lock_file)
        component = older.components[0]
        without = component.model_copy(update={"fetched": [component.fetched[0].model_copy(update={"size": None})]})
        lock_io.write(older.model_copy(update={"components": [without]}).sealed(), lock_file)
        assert run_cli(capsys, "--root", str(root), "lock", "fetching")[0] == 0
        assert lock_io.read(lock_file).components[0].fetched[0].size == len(payload)
        # Another machine (nothing cached) vendors the stack while the URL streams forever.
        monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "elsewhere"))
        server.instead = Endless()
        started = time.monotonic()
        code, _, err = run_cli(capsys, "--root", str(root), "vendor", "fetching", "-o", str(tmp_path / "bundle"))
        took = time.monotonic() - started
        server.instead.done.wait(5)
    lines = [line for line in err.splitlines() if "error:" in line]
    assert code == 1 and len(lines) == 1, err
    assert f"{url}/include.zip: the lock records {len(payload)} bytes, the server sent more" in lines[0]
    assert took < 10 and server.instead.sent < 16 * MiB
    assert scratch(Cache(tmp_path / "elsewhere")) == []


def test_sigterm_mid_download_leaves_nothing_in_the_cache_tmp(tmp_path: Path) -> None:
    server = Endless(length=CAP, pause=0.05)  # slow: the download is under way when the signal comes
    cache = Cache(tmp_path / "cache")
    env = {**os.environ, "STACKBUILD_CACHE": str(cache.root), "STACKBUILD_SITE_CONFIG": str(tmp_path / "site.yaml")}
    env["PYTHONPATH"] = str(ROOT)
    with http_server(server, server.head) as url:
        root = _project(tmp_path, url)
        command = [sys.executable, "-m", "builder", "--root", str(root), "lock", "fetching"]
        proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            while not any(p.stat().st_size for p in _parts(cache)):
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
                time.sleep(0.05)
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=20)
        finally:
            proc.kill()
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1].startswith("stackbuild: terminated;"), err
    assert scratch(cache) == []


def _parts(cache: Cache) -> Iterator[Path]:
    return (cache.root / "tmp").glob("*/part")


HOLD = "import sys, time; from pathlib import Path; from builder.store.cache import Cache\n" + (
    "with Cache(Path(sys.argv[1])).scratch.temp_dir() as d:\n    (d / 'part').write_bytes(b'half');"
    " print(d, flush=True); time.sleep(120)"
)


def _holding(cache: Cache) -> tuple[subprocess.Popen[str], Path]:
    """A process holding a temp_dir of cache (as a download does); the directory."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(cache.root)], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, Path(proc.stdout.readline().strip())


@pytest.mark.parametrize("by", ["start", "gc"])
def test_what_a_killed_process_left_in_tmp_is_swept_and_a_live_ones_is_not(
    by: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = Cache(tmp_path / "cache")
    monkeypatch.setenv("STACKBUILD_CACHE", str(cache.root))
    monkeypatch.setenv("STACKBUILD_SITE_CONFIG", str(tmp_path / "site.yaml"))
    killed, left = _holding(cache)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    live, held = _holding(cache)
    try:
        assert left.is_dir() and held.is_dir()
        if by == "start":  # the next command that uses the cache (a lock of a stack that needs no network)
            root = _project(tmp_path, "unused")
            manifest = root / "stacks" / "fetching.yaml"
            manifest.write_text(manifest.read_text().split("    fetch:")[0] + 'smoke: {command: "true", expect: ""}\n')
            code, _, err = run_cli(capsys, "--root", str(root), "lock", "fetching")
        else:
            monkeypatch.setattr(Context, "engine", lambda *_: FakeEngine())
            code, _, err = run_cli(capsys, "gc")
        assert code == 0, err
        assert not left.exists()
        assert held.is_dir() and (held / "part").read_bytes() == b"half"
    finally:
        live.kill()
        live.wait()
