"""Loopback servers and small tools the tests share."""

from __future__ import annotations

import http.server
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from builder.cli import main


def run_cli(capsys: object, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()  # type: ignore[attr-defined]
    return code, captured.out, captured.err


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


Handler = Callable[[http.server.BaseHTTPRequestHandler], None]


@contextmanager
def http_server(handle_get: Handler, handle_head: Handler | None = None) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 whose GET/HEAD are the given functions; yields its base URL."""

    class RequestHandler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            handle_get(self)

        def do_HEAD(self) -> None:
            (handle_head or handle_get)(self)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RequestHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def git(*args: str, cwd: Path) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "PATH": "/usr/bin:/bin",
        "HOME": str(cwd),
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def make_repo(path: Path, content: str = "v1") -> str:
    """A git repository with one commit on main; its commit id."""
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=path)
    (path / "README").write_text(content)
    git("add", ".", cwd=path)
    git("commit", "-q", "-m", content, cwd=path)
    return git("rev-parse", "HEAD", cwd=path)


def commit(path: Path, content: str) -> str:
    (path / "README").write_text(content)
    git("commit", "-q", "-am", content, cwd=path)
    return git("rev-parse", "HEAD", cwd=path)


@contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """`git daemon` serving every repository under base on loopback; yields git://127.0.0.1:PORT."""
    port = free_port()
    proc = subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            "--export-all",
            f"--base-path={base}",
            "--listen=127.0.0.1",
            f"--port={port}",
            str(base),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("git daemon did not start") from None
                time.sleep(0.05)
        yield f"git://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
