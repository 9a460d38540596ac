"""A tiny Debian-style apt repository for tests, built and served without the network.

``make_deb`` builds real packages with ``dpkg-deb``; ``write_index`` writes a standard (non-flat)
``dists/`` tree for the debs under ``pool/``; ``serve`` puts a directory on a loopback HTTP server.
The repository is unsigned: point apt at it with ``deb [trusted=yes] <url> <suite> <component>``.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import serving

MAINTAINER = "stackbuild tests <tests@example.invalid>"
# A fixed date keeps the Release file byte-for-byte reproducible.
RELEASE_DATE = "Thu, 01 Jan 1970 00:00:00 UTC"


def make_deb(
    out_dir: Path,
    name: str,
    version: str,
    arch: str = "all",
    depends: list[str] | None = None,
    files: dict[str, str] | None = None,
    pre_depends: list[str] | None = None,
    postinst: str | None = None,
) -> Path:
    """Build ``<out_dir>/<name>_<version>_<arch>.deb`` holding ``files`` (path in package -> text),
    with ``postinst`` (a shell script's body) as its maintainer script if given.

    The same inputs give the same bytes (SOURCE_DATE_EPOCH=0, root-owned, fixed modes).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    control = [
        f"Package: {name}",
        f"Version: {version}",
        f"Architecture: {arch}",
        f"Maintainer: {MAINTAINER}",
    ]
    if pre_depends:
        control.append(f"Pre-Depends: {', '.join(pre_depends)}")
    if depends:
        control.append(f"Depends: {', '.join(depends)}")
    control.append(f"Description: {name}, a test package")
    upstream = version.split(":", 1)[-1]  # pool file names carry no epoch
    deb = out_dir / f"{name}_{upstream}_{arch}.deb"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        _write(root / "DEBIAN" / "control", "\n".join(control) + "\n")
        for path, text in (files or {}).items():
            _write(root / path.lstrip("/"), text)
        if postinst is not None:
            _write(root / "DEBIAN" / "postinst", f"#!/bin/sh\n{postinst}\n")
        _normalise(root)
        env = dict(os.environ, SOURCE_DATE_EPOCH="0")
        subprocess.run(
            ["dpkg-deb", "--root-owner-group", "--build", str(root), str(deb)],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
    return deb


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _normalise(root: Path) -> None:
    """Fixed modes and mtimes, whatever the umask and the clock."""
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() or path == root / "DEBIAN" / "postinst" else 0o644)
        os.utime(path, (0, 0))


@dataclass(frozen=True)
class _Deb:
    arch: str
    stanza: str


def write_index(
    repo_dir: Path,
    suite: str = "stable",
    component: str = "main",
    archs: tuple[str, ...] = ("amd64", "arm64"),
) -> None:
    """(Re)write ``dists/<suite>/`` for every .deb under ``repo_dir/pool/``.

    Arch-``all`` packages go in every arch's Packages, the others only in their own arch's.
    """
    debs = [_describe(repo_dir, deb) for deb in sorted((repo_dir / "pool").rglob("*.deb"))]
    dist = repo_dir / "dists" / suite
    shutil.rmtree(dist, ignore_errors=True)
    indexes: list[str] = []
    for arch in archs:
        text = "\n".join(d.stanza for d in debs if d.arch in (arch, "all"))
        rel = f"{component}/binary-{arch}/Packages"
        data = text.encode()
        _write_bytes(dist / rel, data)
        with (dist / f"{rel}.gz").open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
            gz.write(data)
        indexes += [rel, f"{rel}.gz"]
    release = [
        "Origin: stackbuild-tests",
        "Label: stackbuild-tests",
        f"Suite: {suite}",
        f"Codename: {suite}",
        f"Date: {RELEASE_DATE}",
        f"Architectures: {' '.join(archs)}",
        f"Components: {component}",
        "Description: test repository",
    ]
    for field, algo in (("MD5Sum", "md5"), ("SHA256", "sha256")):
        release.append(f"{field}:")
        for rel in indexes:
            data = (dist / rel).read_bytes()
            release.append(f" {hashlib.new(algo, data).hexdigest()} {len(data):>8} {rel}")
    (dist / "Release").write_text("\n".join(release) + "\n")


def _write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _describe(repo_dir: Path, deb: Path) -> _Deb:
    """The deb's Packages stanza: its control fields plus where it is and its checksums."""
    fields = subprocess.run(["dpkg-deb", "--field", str(deb)], check=True, capture_output=True, text=True).stdout
    arch = subprocess.run(
        ["dpkg-deb", "--field", str(deb), "Architecture"], check=True, capture_output=True, text=True
    ).stdout.strip()
    data = deb.read_bytes()
    extra = [
        f"Filename: {deb.relative_to(repo_dir).as_posix()}",
        f"Size: {len(data)}",
        f"MD5sum: {hashlib.md5(data).hexdigest()}",
        f"SHA256: {hashlib.sha256(data).hexdigest()}",
    ]
    return _Deb(arch=arch, stanza=fields.rstrip("\n") + "\n" + "\n".join(extra) + "\n")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on a free 127.0.0.1 port; yields the base URL ``http://127.0.0.1:<port>``."""
    with serving(functools.partial(_QuietHandler, directory=str(directory))) as url:
        yield url
