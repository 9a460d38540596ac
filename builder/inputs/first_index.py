"""Several Python package indexes as one, the way a platform needs them (torch's `+cpu` builds from
PyTorch's CPU index, the rest from PyPI): a PEP 503 simple index on loopback that answers each
project from the first index listing it. Candidates are never merged across indexes (pip's
`--extra-index-url` does, which is how dependency confusion happens), and which index gave each
project is recorded for the lock.

An index is a URL (a simple index) or a wheelhouse directory; a wheelhouse's files are served
through this index, with their sha256 in the links as a simple index gives them.
"""

from __future__ import annotations

import html
import http.server
import re
import shutil
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote, urljoin

import requests
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from builder.store.files import CHUNK, sha256_file
from builder.store.http import redact

HREF = re.compile(r'href="([^"]*)"')


@dataclass(frozen=True)
class Source:
    """One index as given (what the lock records) and where it is read here (site rewrites applied)."""

    given: str
    where: str  # a URL, or a wheelhouse directory's path

    @property
    def is_url(self) -> bool:
        return bool(re.match(r"^[a-z][a-z0-9+.-]*://", self.where))


@dataclass
class Chosen:
    """Which index answered each project (canonical name -> Source.given)."""

    by_project: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, project: str, given: str) -> None:
        with self.lock:
            self.by_project[project] = given


def _wheelhouse_files(directory: Path, project: str) -> list[Path]:
    found = []
    for path in sorted(directory.glob("*.whl")):
        try:
            name = parse_wheel_filename(path.name)[0]
        except InvalidWheelFilename:
            continue
        if name == project:
            found.append(path)
    return found


def _page(links: Sequence[tuple[str, str]]) -> bytes:
    body = "".join(f'<a href="{html.escape(href)}">{html.escape(text)}</a>\n' for href, text in links)
    return f"<!DOCTYPE html>\n<html><body>\n{body}</body></html>\n".encode()


class _Answers:
    """What the loopback index says: a project's page from the first source that has it."""

    def __init__(self, sources: Sequence[Source], chosen: Chosen, timeout: float) -> None:
        self.sources, self.chosen, self.timeout = sources, chosen, timeout
        self.session = requests.Session()

    def project(self, project: str) -> bytes | None:
        for n, source in enumerate(self.sources):
            page = self._remote(source, project) if source.is_url else self._wheelhouse(n, source, project)
            if page is not None:
                self.chosen.record(project, source.given)
                return page
        return None

    def _remote(self, source: Source, project: str) -> bytes | None:
        url = f"{source.where.rstrip('/')}/{project}/"
        answer = self.session.get(url, timeout=self.timeout, headers={"Accept": "text/html"})
        if answer.status_code == 404:
            return None
        answer.raise_for_status()
        # Links made absolute: pip reads this page from loopback, the files stay on that index.
        text = HREF.sub(lambda m: f'href="{html.escape(urljoin(answer.url, html.unescape(m.group(1))))}"', answer.text)
        return text.encode()

    def _wheelhouse(self, n: int, source: Source, project: str) -> bytes | None:
        files = _wheelhouse_files(Path(source.where), project)
        if not files:
            return None
        return _page([(f"/files/{n}/{quote(p.name)}#sha256={sha256_file(p)}", p.name) for p in files])

    def file(self, n: int, name: str) -> Path | None:
        if n >= len(self.sources) or self.sources[n].is_url or "/" in name or name.startswith("."):
            return None
        path = Path(self.sources[n].where) / name
        return path if path.is_file() else None


def _handler(answers: _Answers) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            path = unquote(self.path.split("?", 1)[0])
            if found := re.fullmatch(r"/simple/([^/]+)/?", path):
                self._project(canonicalize_name(found.group(1)))
            elif found := re.fullmatch(r"/files/([0-9]+)/([^/]+)", path):
                self._file(int(found.group(1)), found.group(2))
            else:
                self._send(404, b"")

        def _project(self, project: str) -> None:
            try:
                page = answers.project(project)
            except requests.RequestException as err:  # an index that does not answer: pip says which project
                self._send(502, redact(str(err)).encode())
                return
            self._send(404, b"") if page is None else self._send(200, page, "text/html")

        def _file(self, n: int, name: str) -> None:
            path = answers.file(n, name)
            if path is None:
                self._send(404, b"")
                return
            self.send_response(200)
            self.send_header("Content-Length", str(path.stat().st_size))
            self.end_headers()
            with path.open("rb") as f:
                shutil.copyfileobj(f, self.wfile, CHUNK)

        def _send(self, code: int, body: bytes, kind: str = "text/plain") -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def first_index(sources: Sequence[Source], timeout: float = 60.0) -> Iterator[tuple[str, Chosen]]:
    """(the loopback index's URL, what it chose) while the block runs."""
    chosen = Chosen()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(_Answers(sources, chosen, timeout)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/", chosen
    finally:
        server.shutdown()
        server.server_close()
