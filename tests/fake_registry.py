"""Registries for the fast tests: an HTTP server on loopback answering as a test says, and an in-memory
registry (`Store`) answering the distribution API as Debian's docker-registry does (no referrers API)."""

from __future__ import annotations

import hashlib
import http.server
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

Answer = tuple[int, dict[str, str], bytes]


@contextmanager
def server(
    answer: Callable[[http.server.BaseHTTPRequestHandler], Answer], host: str = "127.0.0.1"
) -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on a loopback address; its host:port and the requests it saw ("METHOD path Authorization")."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def handle_one(self) -> None:
            seen.append(f"{self.command} {self.path} {self.headers.get('Authorization', '-')}")
            length = int(self.headers.get("Content-Length") or 0)
            self.body = self.rfile.read(length) if length else b""
            status, headers, body = answer(self)
            self.send_response(status)
            for key, value in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_PUT = do_HEAD = do_POST = handle_one

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer((host, 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"{host}:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()


ROUTE = re.compile(r"^/v2/(?P<repository>.+)/(?P<kind>manifests|blobs|referrers)/(?P<rest>[^?]*)(\?digest=(?P<d>.+))?$")


@dataclass
class Store:
    """What the registry holds: manifests by repository and reference (tag or digest), blobs by digest."""

    manifests: dict[tuple[str, str], tuple[str, bytes]] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)
    puts: list[str] = field(default_factory=list)  # "repository:reference" of every manifest put

    def put(self, repository: str, reference: str, media_type: str, body: bytes) -> str:
        digest = f"sha256:{hashlib.sha256(body).hexdigest()}"
        self.manifests[(repository, reference)] = self.manifests[(repository, digest)] = (media_type, body)
        return digest

    def answer(self, request: http.server.BaseHTTPRequestHandler) -> Answer:
        if request.path == "/v2/" or (route := ROUTE.match(request.path)) is None:
            return 200, {}, b"{}"
        repository, kind, rest = route["repository"], route["kind"], route["rest"]
        if kind == "manifests" and request.command == "PUT":
            self.puts.append(f"{repository}:{rest}")
            digest = self.put(repository, rest, request.headers["Content-Type"], request.body)  # type: ignore[attr-defined]
            return 201, {"Docker-Content-Digest": digest}, b""
        if kind == "manifests" and (repository, rest) in self.manifests:
            media_type, body = self.manifests[(repository, rest)]
            return 200, {"Content-Type": media_type}, body
        if kind == "blobs" and request.command == "POST":
            return 202, {"Location": f"/v2/{repository}/blobs/uploads/1"}, b""
        if kind == "blobs" and rest.startswith("uploads/"):
            self.blobs[route["d"].replace("%3A", ":")] = request.body  # type: ignore[attr-defined]
            return 201, {}, b""
        if kind == "blobs" and rest in self.blobs:
            return 200, {}, self.blobs[rest]
        return 404, {}, b'{"errors": [{"code": "MANIFEST_UNKNOWN"}]}'
