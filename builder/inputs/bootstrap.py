"""Base root filesystems bootstrapped with mmdebstrap, bit-identical run to run.

SOURCE_DATE_EPOCH fixes every timestamp mmdebstrap and dpkg write, so the same spec on the
same mirror state gives the same tarball (checked: two runs, same sha256). Tarballs go into
the cache; a record per spec remembers which blob it produced, so a relock does not
bootstrap again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from builder.manifest.model import Bootstrap
from builder.model.arch import Arch
from builder.model.canonical import digest
from builder.model.errors import StackbuildError
from builder.store.cache import Cache

SOURCE_DATE_EPOCH = 1704067200  # 2024-01-01T00:00:00Z; any fixed value works
Flavor = Literal["devel", "runtime"]
FLAVORS: tuple[Flavor, ...] = ("devel", "runtime")


@dataclass(frozen=True)
class BaseTarball:
    sha256: str
    packages: dict[str, str]


def spec_key(spec: Bootstrap, arch: Arch, flavor: Flavor) -> str:
    packages = spec.packages if flavor == "devel" else spec.runtime_packages
    data = {
        "suite": spec.suite,
        "mirror": spec.mirror,
        "variant": spec.variant,
        "packages": sorted(packages),
        "arch": arch.value,
        "epoch": SOURCE_DATE_EPOCH,
    }
    return digest(data)


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


def recorded(spec: Bootstrap, arch: Arch, flavor: Flavor, cache: Cache) -> BaseTarball | None:
    """The tarball this spec last produced here, if it is still in the cache."""
    known = cache.read_record("base", spec_key(spec, arch, flavor))
    if known is None or not isinstance(known.get("packages"), dict) or not cache.has(str(known.get("sha256"))):
        return None
    return BaseTarball(known["sha256"], known["packages"])


def _command(spec: Bootstrap, arch: Arch, flavor: Flavor, out: Path, mirror: str) -> list[str]:
    packages = spec.packages if flavor == "devel" else spec.runtime_packages
    cmd = [
        "mmdebstrap",
        f"--variant={spec.variant}",
        f"--architectures={arch.debian}",
        "--mode=root" if os.geteuid() == 0 else "--mode=unshare",
        '--aptopt=Acquire::Retries "3"',
        # Docs and apt lists are not needed in an image and only add size.
        "--dpkgopt=path-exclude=/usr/share/doc/*",
        "--dpkgopt=path-exclude=/usr/share/man/*",
        '--customize-hook=rm -rf "$1"/var/lib/apt/lists/*',
    ]
    if packages:
        cmd.append("--include=" + ",".join(packages))
    # The suite and mirror are checked at validation; `--` still ends the options before them.
    return [*cmd, "--", spec.suite, str(out), mirror]


def bootstrap(spec: Bootstrap, arch: Arch, flavor: Flavor, cache: Cache, mirror: str | None = None) -> BaseTarball:
    """The base tarball for arch ('devel' or 'runtime' package set), bootstrapping if not cached."""
    with cache.lock(f"base-{spec_key(spec, arch, flavor)}"):
        return _bootstrap(spec, arch, flavor, cache, mirror)


def _bootstrap(spec: Bootstrap, arch: Arch, flavor: Flavor, cache: Cache, mirror: str | None) -> BaseTarball:
    if (known := recorded(spec, arch, flavor, cache)) is not None:
        return known
    if not shutil.which("mmdebstrap"):
        raise StackbuildError("mmdebstrap is not installed: run `python -m builder.hostsetup --docker`")
    with cache.temp_dir() as tmp:
        out = tmp / "base.tar"
        env = dict(os.environ, SOURCE_DATE_EPOCH=str(SOURCE_DATE_EPOCH))
        run = subprocess.run(
            _command(spec, arch, flavor, out, mirror or spec.mirror), env=env, capture_output=True, text=True
        )
        if run.returncode != 0:
            tail = "\n".join(run.stderr.strip().splitlines()[-8:])
            raise StackbuildError(f"mmdebstrap {spec.suite} ({arch}, {flavor}) failed:\n{tail}")
        versions = dpkg_versions(out)
        sha = cache.add_part(out, None, "base tarball")
    cache.write_record({"sha256": sha, "packages": versions}, "base", spec_key(spec, arch, flavor))
    return BaseTarball(sha, versions)
