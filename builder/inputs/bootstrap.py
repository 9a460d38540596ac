"""Base root filesystems bootstrapped with mmdebstrap, bit-identical run to run and machine to machine.

SOURCE_DATE_EPOCH fixes every timestamp mmdebstrap and dpkg write, and the host files mmdebstrap copies
in are replaced by empty ones, so the same spec on the same mirror state gives the same tarball
(checked: two runs, same sha256). Tarballs go into the cache; a record per spec remembers which blob
it produced, so a relock does not bootstrap again.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from builder.manifest.bases import Bootstrap
from builder.manifest.types import SOURCE_DATE_EPOCH
from builder.model.arch import Arch
from builder.model.canonical import digest
from builder.model.errors import InputError, StackbuildError
from builder.model.say import Say
from builder.store.cache import Cache
from builder.store.http import must_answer

# Keyrings stackbuild ships, for archives a Debian host does not trust. ubuntu-keyring-2018-archive.gpg is
# ubuntu-keyring 2021.03.26's (archive key 2018: F6EC B376 2474 EDA9 D21B  7022 8719 20D1 991B C93C).
SHIPPED_KEYRINGS = Path(__file__).parent / "keyrings"
HOST_FILES = ("etc/resolv.conf", "etc/hostname")
Flavor = Literal["devel", "runtime"]
FLAVORS: tuple[Flavor, ...] = ("devel", "runtime")
T = TypeVar("T")


@dataclass(frozen=True)
class BaseTarball:
    sha256: str
    packages: dict[str, str]


@dataclass(frozen=True)
class Keyring:
    name: str
    data: bytes


def keyring(spec: Bootstrap, manifest_dir: Path) -> Keyring | None:
    """The spec's keyring: the file next to the manifest, else the one stackbuild ships."""
    if spec.keyring is None:
        return None
    for place in (manifest_dir, SHIPPED_KEYRINGS):
        if (place / spec.keyring).is_file():
            return Keyring(spec.keyring, (place / spec.keyring).read_bytes())
    shipped = ", ".join(sorted(p.name for p in SHIPPED_KEYRINGS.iterdir()))
    raise InputError(
        f"base.bootstrap.keyring: no file {spec.keyring} next to the manifest ({manifest_dir}) nor among the "
        f"keyrings stackbuild ships ({shipped}): put the archive's key file there"
    )


def spec_key(spec: Bootstrap, arch: Arch, flavor: Flavor, keys: Keyring | None) -> str:
    """What the tarball is made from: every argument mmdebstrap gets but where it writes and how it
    gains root (neither changes a byte), and the keyring's bytes. The mirror is the manifest's: the
    lock records this key, which stays the same behind any site rewrite."""
    keyfile = Path(keys.name) if keys is not None else None
    command = _command(spec, arch, flavor, Path("OUT"), spec.mirror_for(arch), keyfile)
    data: dict[str, object] = {
        "command": [part for part in command if not part.startswith("--mode=")],
        "epoch": SOURCE_DATE_EPOCH,
    }
    if keys is not None:
        data["keyring"] = hashlib.sha256(keys.data).hexdigest()
    return digest(data)


def record_key(spec: Bootstrap, arch: Arch, flavor: Flavor, keys: Keyring | None, mirror: str) -> str:
    """The cache's record of a bootstrap: its spec, and the mirror it came from after site rewrites
    (mmdebstrap writes that one into the base's apt sources)."""
    return digest({"spec": spec_key(spec, arch, flavor, keys), "mirror": mirror})


def dpkg_versions(tarball: Path) -> dict[str, str]:
    """Installed package versions, read from the tarball's dpkg status file."""
    with tarfile.open(tarball) as tar:
        member = next((m for m in tar.getmembers() if m.name.lstrip("./") == "var/lib/dpkg/status"), None)
        handle = tar.extractfile(member) if member else None
        text = handle.read().decode() if handle else ""
    versions = {}
    for stanza in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line.startswith(" "))
        if fields.get("Status", "").endswith(" installed") and "Package" in fields:
            versions[fields["Package"]] = fields.get("Version", "")
    return dict(sorted(versions.items()))


def recorded(
    spec: Bootstrap, arch: Arch, flavor: Flavor, keys: Keyring | None, cache: Cache, mirror: str
) -> BaseTarball | None:
    """The tarball this spec last produced here from mirror, if it is still in the cache."""
    known = cache.records.read("base", record_key(spec, arch, flavor, keys, mirror))
    if known is None or not isinstance(known.get("packages"), dict) or not cache.has(str(known.get("sha256"))):
        return None
    return BaseTarball(known["sha256"], known["packages"])


def _command(spec: Bootstrap, arch: Arch, flavor: Flavor, out: Path, mirror: str, keyfile: Path | None) -> list[str]:
    packages = spec.packages if flavor == "devel" else spec.runtime_packages
    cmd = [
        "mmdebstrap",
        f"--variant={spec.variant}",
        f"--architectures={arch.debian}",
        "--components=" + ",".join(spec.components),
        "--mode=root" if os.geteuid() == 0 else "--mode=unshare",
        "--verbose",  # apt's and dpkg's lines: the progress shown while it runs
        '--aptopt=Acquire::Retries "3"',
        # Docs and apt lists are not needed in an image and only add size.
        "--dpkgopt=path-exclude=/usr/share/doc/*",
        "--dpkgopt=path-exclude=/usr/share/man/*",
        '--customize-hook=rm -rf "$1"/var/lib/apt/lists/*',
        # mmdebstrap copies the host's resolv.conf and hostname in (its manual, "SOURCE_DATE_EPOCH"), which
        # would make the tarball differ by machine; the engine mounts its own over both at run time.
        *(f'--customize-hook=rm -f "$1"/{f} && : > "$1"/{f} && chmod 0644 "$1"/{f}' for f in HOST_FILES),
    ]
    if keyfile is not None:
        # The base trusts its own archive afterwards, as the distribution's images do.
        cmd += [f"--keyring={keyfile}", f"--customize-hook=copy-in {keyfile} /etc/apt/trusted.gpg.d/"]
    if packages:
        cmd.append("--include=" + ",".join(packages))
    # The suite and mirror are checked at validation; `--` still ends the options before them.
    return [*cmd, "--", spec.suite, str(out), mirror]


class _Progress:
    """mmdebstrap's verbose output as a few lines: its phases, and packages fetched / set up every few seconds."""

    EVERY = 3.0

    def __init__(self, label: str, say: Say) -> None:
        self.label, self.say = label, say
        self.fetched = self.set_up = 0
        self.last = time.monotonic()
        self.tail: list[str] = []
        self.problems: list[str] = []

    def line(self, text: str) -> None:
        if text.startswith(("E: ", "W: ")):  # apt's and mmdebstrap's errors: what a failure message needs
            self.problems = [*self.problems[-7:], text]
        self.tail = [*self.tail[-7:], text]
        if text.startswith("I: ") and not text.startswith(("I: running --", "I: removing tempdir")):
            self.say(f"  {self.label}: {text[3:]}")
        elif text.startswith("Get:"):
            self.fetched += 1
        elif text.startswith("Setting up "):
            self.set_up += 1
        now = time.monotonic()
        if now - self.last > self.EVERY and (self.fetched or self.set_up):
            self.last = now
            self.say(f"  {self.label}: {self.fetched} packages fetched, {self.set_up} set up")


def each_flavor(make: Callable[[Flavor], T]) -> dict[Flavor, T]:
    """make(flavor) for both base flavors at once: one's downloads overlap the other's unpacking."""
    with ThreadPoolExecutor(len(FLAVORS)) as pool:
        made = {flavor: pool.submit(make, flavor) for flavor in FLAVORS}
        return {flavor: future.result() for flavor, future in made.items()}


def emulated(arch: Arch) -> bool:
    """Whether binaries of arch run here (arch-test: natively or through binfmt_misc and qemu)."""
    found = shutil.which("arch-test")
    return found is not None and subprocess.run([found, arch.debian], capture_output=True).returncode == 0


def bootstrap(
    spec: Bootstrap, arch: Arch, flavor: Flavor, keys: Keyring | None, cache: Cache, mirror: str, say: Say
) -> BaseTarball:
    """The base tarball for arch ('devel' or 'runtime' package set) from mirror (the spec's for arch,
    after site rewrites), bootstrapping if not cached (its progress to say)."""
    with cache.locks.exclusive(f"base-{record_key(spec, arch, flavor, keys, mirror)}"):
        return _bootstrap(spec, arch, flavor, keys, cache, mirror, _Progress(f"base {arch} {flavor}", say))


def _bootstrap(
    spec: Bootstrap, arch: Arch, flavor: Flavor, keys: Keyring | None, cache: Cache, mirror: str, progress: _Progress
) -> BaseTarball:
    if (known := recorded(spec, arch, flavor, keys, cache, mirror)) is not None:
        return known
    if not shutil.which("mmdebstrap"):
        raise StackbuildError("mmdebstrap is not installed: run `python -m builder.hostsetup --docker`")
    if arch != Arch.host() and not emulated(arch):
        raise StackbuildError(
            f"bootstrapping {arch} on this {Arch.host()} machine runs its binaries under emulation, which is not "
            f"set up: run `python -m builder.hostsetup --foreign {arch}` (as root)"
        )
    must_answer(mirror, f"the {arch} mirror of {spec.suite}", spec.mirror_for(arch))
    # apt reads the keyring as its unprivileged _apt user: it cannot sit in a private cache directory.
    with cache.scratch.temp_dir() as tmp, tempfile.TemporaryDirectory(prefix="stackbuild-keyring-") as key_dir:
        out = tmp / "base.tar"
        keyfile = None
        if keys is not None:
            os.chmod(key_dir, 0o755)
            keyfile = Path(key_dir) / keys.name
            keyfile.write_bytes(keys.data)
            keyfile.chmod(0o644)
        env = dict(os.environ, SOURCE_DATE_EPOCH=str(SOURCE_DATE_EPOCH))
        command = _command(spec, arch, flavor, out, mirror, keyfile)
        with subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as run:
            assert run.stderr is not None
            for line in run.stderr:
                progress.line(line.rstrip("\n"))
        if run.returncode != 0:
            tail = "\n".join(dict.fromkeys([*progress.problems, *progress.tail]))
            raise StackbuildError(f"mmdebstrap {spec.suite} ({arch}, {flavor}) failed:\n{tail}")
        versions = dpkg_versions(out)
        sha = cache.add_part(out, None, "base tarball")
    cache.records.write({"sha256": sha, "packages": versions}, "base", record_key(spec, arch, flavor, keys, mirror))
    return BaseTarball(sha, versions)
