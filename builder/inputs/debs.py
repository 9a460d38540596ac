"""System packages: the dependency closure resolved with apt against the base, and the .debs.

Debian's mirror serves only current versions, so a lock pins every .deb of the closure (name,
version, architecture, pool path, sha256) and the lock downloads them into the cache; a build
installs them from its context without network. Resolution runs the host's apt in a private
root (chdist-style) holding the base's dpkg status, apt sources and keys, so the closure is
what the base is missing, for the target architecture, with no emulation.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from builder.engine import Engine, EngineError
from builder.model.arch import Arch
from builder.model.errors import StackbuildError
from builder.store.cache import Cache
from builder.store.files import sha256_file
from builder.store.http import DownloadError, HttpClient, SizeLimit, must_answer, redact

DEB_FILE = r"^[A-Za-z0-9][A-Za-z0-9.+~%_-]*\.deb$"
_INST = re.compile(r"^Inst (\S+) (?:\[[^\]]*\] )?\((\S+) .*\[([a-z0-9-]+)\]\)", re.M)
_URI = re.compile(r"^'([^']+)' (\S+) \d+ ", re.M)


class SystemPackageError(StackbuildError):
    pass


@dataclass(frozen=True)
class AptSource:
    """One `deb` line: a repository URL (site rewrites apply), a suite and its components."""

    url: str
    suite: str
    components: tuple[str, ...]
    trusted: bool = False

    def line(self, url: str) -> str:
        options = "[trusted=yes] " if self.trusted else ""
        return f"deb {options}{url} {self.suite} {' '.join(self.components)}".rstrip()


@dataclass(frozen=True)
class BaseRoot:
    """What apt needs from a base's root filesystem to resolve against it."""

    status: bytes
    sources: tuple[AptSource, ...]
    keys: tuple[tuple[str, bytes], ...]  # (file name, key) from etc/apt/trusted.gpg.d


@dataclass(frozen=True)
class Deb:
    name: str
    version: str
    architecture: str
    repository: str  # the source URL as the manifest or the base has it (before site rewrites)
    path: str  # pool path below the repository
    sha256: str
    size: int

    @property
    def file(self) -> str:
        return self.path.rsplit("/", 1)[-1]


def parse_sources(text: str) -> list[AptSource]:
    """The `deb` lines of a one-line-style sources.list (options other than trusted= dropped:
    keys come from the base's trusted.gpg.d)."""
    found = []
    for raw in text.splitlines():
        words = raw.split("#", 1)[0].split()
        if not words or words[0] != "deb":
            continue
        words = words[1:]
        trusted = False
        if words and words[0].startswith("["):
            options = []
            while words:
                word = words.pop(0)
                options.append(word.strip("[]"))
                if word.endswith("]"):
                    break
            trusted = "trusted=yes" in options
        if len(words) >= 2:
            found.append(AptSource(words[0], words[1], tuple(words[2:]), trusted))
    return found


def parse_deb822(text: str) -> list[AptSource]:
    """The `deb` entries of a deb822 .sources file (Ubuntu 24.04 and Debian 13 ship these)."""
    found = []
    for stanza in text.split("\n\n"):
        fields = {}
        for line in stanza.splitlines():
            if ":" in line and not line.startswith((" ", "#")):
                key, _, value = line.partition(":")
                fields[key.strip().lower()] = value.strip()
        if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes") == "no":
            continue
        trusted = fields.get("trusted", "no") == "yes"
        for uri in fields.get("uris", "").split():
            for suite in fields.get("suites", "").split():
                found.append(AptSource(uri, suite, tuple(fields.get("components", "").split()), trusted))
    return found


# What apt needs from a base's root: dpkg's status, the apt sources and the keys they are signed with.
ROOT_PATHS = (
    "/var/lib/dpkg/status",
    "/etc/apt/sources.list",
    "/etc/apt/sources.list.d",
    "/etc/apt/trusted.gpg.d",
    "/etc/apt/keyrings",
    "/usr/share/keyrings",
)


def root_from_files(files: dict[str, bytes]) -> BaseRoot:
    """A BaseRoot from the base's files (absolute path -> content)."""
    sources: list[AptSource] = []
    keys = []
    for path, data in sorted(files.items()):
        if path.endswith(".list") and path.startswith("/etc/apt/"):
            sources.extend(parse_sources(data.decode(errors="replace")))
        elif path.endswith(".sources") and path.startswith("/etc/apt/"):
            sources.extend(parse_deb822(data.decode(errors="replace")))
        elif path.startswith(("/etc/apt/trusted.gpg.d/", "/etc/apt/keyrings/")) and path.endswith((".gpg", ".asc")):
            keys.append((path.rsplit("/", 1)[-1], data))
        elif path.startswith("/usr/share/keyrings/") and "-archive-keyring" in path and path.endswith(".gpg"):
            keys.append((path.rsplit("/", 1)[-1], data))  # what deb822 sources name in Signed-By
    for source in sources:
        _check_source(source.url)
    return BaseRoot(files.get("/var/lib/dpkg/status", b""), tuple(sources), tuple(keys))


def _check_source(url: str) -> None:
    """A base's apt source goes into the lock: plain http(s)/file URLs without credentials only."""
    if not re.match(r"^(https?|file)://", url):
        raise SystemPackageError(
            f"the base's apt sources list {redact(url)}: only http, https and file sources are locked"
        )
    if re.match(r"^[a-z]+://[^/@\s]+@", url):
        raise SystemPackageError(
            f"the base's apt sources list {redact(url)} with credentials: give the mirror through the site "
            "config's url_rewrites (credentials from apt's auth.conf.d are not read)"
        )


def root_from_tarball(tarball: Path) -> BaseRoot:
    """The BaseRoot of a bootstrapped base's tarball."""
    files = {}
    with tarfile.open(tarball) as tar:
        for member in tar:
            path = "/" + member.name.removeprefix("./")
            if member.isfile() and any(path == p or path.startswith(p + "/") for p in ROOT_PATHS):
                handle = tar.extractfile(member)
                files[path] = handle.read() if handle else b""
    return root_from_files(files)


@dataclass(frozen=True)
class BaseRef:
    """The base a closure is resolved on: a bootstrapped tarball, or an image pinned by digest."""

    tarball: Path | None = None
    image: str | None = None


def base_root(base: BaseRef, arch: Arch, engine: Callable[[], Engine]) -> BaseRoot:
    if base.tarball is not None:
        if not base.tarball.is_file():
            raise SystemPackageError(f"the base tarball is not in the cache ({base.tarball.name}): relock")
        return root_from_tarball(base.tarball)
    assert base.image is not None
    try:
        return root_from_files(engine().files(base.image, ROOT_PATHS, arch))
    except EngineError as err:
        raise SystemPackageError(f"system packages are resolved against the base image {base.image}: {err}") from err


class PrivateApt:
    """The host's apt in a directory of its own: the base's state, none of the host's."""

    def __init__(
        self, root: Path, base: BaseRoot, sources: Sequence[AptSource], arch: Arch, rewrite: Callable[[str], str]
    ):
        if shutil.which("apt-get") is None:
            raise SystemPackageError(
                "locking system packages needs apt (apt-get) on this host: run it on Debian or Ubuntu"
            )
        self.root, self.arch = root, arch
        for sub in ("state/lists/partial", "cache/archives/partial", "trusted.gpg.d"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        (root / "status").write_bytes(base.status)
        for name, key in base.keys:
            (root / "trusted.gpg.d" / name).write_bytes(key)
        self.sources = [*base.sources, *sources]
        self.fetch_urls = {s.url: rewrite(s.url) for s in self.sources}
        (root / "sources.list").write_text("".join(s.line(self.fetch_urls[s.url]) + "\n" for s in self.sources))
        # apt reads $APT_CONFIG before any -o: it keeps the host's apt.conf.d out.
        (root / "apt.conf").write_text('Dir::Etc::Parts "/dev/null";\nDir::Etc::Main "/dev/null";\n')

    def run(self, *args: str) -> str:
        return self._run("apt-get", *args)

    def cache(self, *args: str) -> str:
        return self._run("apt-cache", *args)

    def _run(self, tool: str, *args: str) -> str:
        r = str(self.root)
        options = {
            "Dir": r,
            "Dir::State": f"{r}/state",
            "Dir::State::status": f"{r}/status",
            "Dir::Cache": f"{r}/cache",
            "Dir::Etc::SourceList": f"{r}/sources.list",
            "Dir::Etc::SourceParts": "/dev/null",
            "Dir::Etc::Parts": "/dev/null",
            "Dir::Etc::Preferences": "/dev/null",
            "Dir::Etc::PreferencesParts": "/dev/null",
            "Dir::Etc::Trusted": "/dev/null",
            "Dir::Etc::TrustedParts": f"{r}/trusted.gpg.d",
            "Debug::NoLocking": "1",
            "APT::Architecture": self.arch.debian,
            "APT::Architectures": self.arch.debian,
            "APT::Sandbox::User": "root",
            "APT::Install-Recommends": "0",
            "Acquire::Retries": "3",
        }
        command = [tool, "-q", *(f"-o{k}={v}" for k, v in options.items()), *args]
        env = dict(os.environ, APT_CONFIG=f"{r}/apt.conf", LC_ALL="C", DEBIAN_FRONTEND="noninteractive")
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            errors = [line for line in done.stderr.splitlines() if line.startswith("E:")] or done.stderr.splitlines()[
                -3:
            ]
            raise SystemPackageError(" ".join(redact_urls(line) for line in errors))
        return done.stdout

    def repository_of(self, url: str) -> str:
        """The source (URL as written, before site rewrites) a download URL apt printed is from."""
        for original, fetched in sorted(self.fetch_urls.items(), key=lambda kv: -len(kv[1])):
            if _plain_file(url).startswith(_plain_file(fetched).rstrip("/") + "/"):
                return original
        raise SystemPackageError(f"apt chose {redact(url)}, which is under none of the configured sources")


def _plain_file(url: str) -> str:
    """apt prints file:///srv/repo as file:/srv/repo."""
    return re.sub(r"^file://", "file:", url)


def redact_urls(line: str) -> str:
    return re.sub(r"[a-z][a-z0-9+.-]*://\S+", lambda m: redact(m.group(0)), line)


def _records(text: str) -> dict[tuple[str, str, str], dict[str, str]]:
    """apt-cache show stanzas by (package, version, architecture); the first of each wins."""
    found: dict[tuple[str, str, str], dict[str, str]] = {}
    for stanza in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line.startswith(" "))
        if {"Package", "Version", "Architecture"} <= fields.keys():
            found.setdefault((fields["Package"], fields["Version"], fields["Architecture"]), fields)
    return found


def closure(apt: PrivateApt, packages: Sequence[str]) -> list[Deb]:
    """Every .deb installing packages needs on the base, in apt's install order."""
    if not packages:
        return []
    chosen = _INST.findall(apt.run("install", "-s", "--", *packages))
    if not chosen:
        return []
    # apt prints download URLs with whatever hash it likes best; the index records have SHA256.
    urls = {
        file.split("_", 1)[0]: url
        for url, file in _URI.findall(apt.run("install", "--print-uris", "-qq", "--", *packages))
    }
    records = _records(apt.cache("show", "--", *(f"{name}={version}" for name, version, _ in chosen)))
    debs = []
    for name, version, arch in chosen:
        fields = records.get((name, version, arch))
        if fields is None or name not in urls or not re.fullmatch(r"[0-9a-f]{64}", fields.get("SHA256", "")):
            raise SystemPackageError(
                f"the repository gives no SHA256 for {name} {version}: stackbuild pins .debs by it"
            )
        path = fields.get("Filename", "")
        if not re.match(DEB_FILE, path.rsplit("/", 1)[-1]):
            raise SystemPackageError(f"unexpected .deb file name from the repository: {path[:120]!r}")
        repository = apt.repository_of(urls[name])
        debs.append(Deb(name, version, arch, repository, path, fields["SHA256"], int(fields.get("Size", "0"))))
    return debs


def resolve(
    base: BaseRoot,
    sources: Sequence[AptSource],
    scopes: Sequence[tuple[str, Sequence[str]]],
    arch: Arch,
    rewrite: Callable[[str], str],
    cache: Cache,
) -> dict[str, list[Deb]]:
    """The closure of each scope's packages on the base (one `apt-get update` for all)."""
    for source in sources:
        must_answer(rewrite(source.url), f"apt repository {source.suite}", source.url)
    with cache.scratch.temp_dir() as tmp:
        apt = PrivateApt(tmp, base, sources, arch, rewrite)
        apt.run("update")
        return {scope: closure(apt, packages) for scope, packages in scopes}


def resolve_on(
    base: BaseRef,
    sources: Sequence[AptSource],
    scopes: Sequence[tuple[str, Sequence[str]]],
    arch: Arch,
    rewrite: Callable[[str], str],
    cache: Cache,
) -> dict[str, list[Deb]]:
    """resolve() against a base: its tarball, or its image (through the Docker engine)."""
    from builder.engine import connect  # only an image base needs the engine

    return resolve(base_root(base, arch, connect), sources, scopes, arch, rewrite, cache)


def fetch(deb: Deb, cache: Cache, deb_dirs: Sequence[Path], mirrors: Sequence[str], client: HttpClient) -> str | None:
    """The .deb in the cache: already there, from a site directory, the repository, or a snapshot
    mirror (each URL as rewritten by the site); None when it is served nowhere any more."""
    if cache.has(deb.sha256):
        return deb.sha256
    for directory in deb_dirs:
        candidate = directory / deb.file
        if candidate.is_file() and sha256_file(candidate) == deb.sha256:
            return cache.add_file(candidate, deb.sha256)
    for base in mirrors:
        try:
            url = f"{base.rstrip('/')}/{quote(deb.path)}"
            return client.download(url, cache, deb.sha256, limit=SizeLimit(deb.size, locked=True))
        except DownloadError:
            continue
    return None
