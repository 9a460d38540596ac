"""Base root filesystems bootstrapped with mmdebstrap, bit-identical run to run.

SOURCE_DATE_EPOCH fixes every timestamp mmdebstrap and dpkg write, so the same spec on the
same mirror state gives the same tarball (checked: two runs, same sha256). Tarballs go
into the content-addressed cache; `<cache>/base/<spec key>.json` remembers which blob a spec
produced so a relock does not bootstrap again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from builder.errors import StackbuildError
from builder.fetch import Cache
from builder.manifest import Bootstrap

DEBIAN_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}
SOURCE_DATE_EPOCH = 1704067200  # 2024-01-01T00:00:00Z; any fixed value works


@dataclass(frozen=True)
class BaseTarball:
    sha256: str
    packages: dict[str, str]


def spec_key(spec: Bootstrap, arch: str, flavor: str, mirror: str) -> str:
    packages = spec.packages if flavor == "devel" else spec.runtime_packages
    data = {
        "suite": spec.suite,
        "mirror": mirror,
        "variant": spec.variant,
        "packages": sorted(packages),
        "arch": arch,
        "epoch": SOURCE_DATE_EPOCH,
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


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


def bootstrap(spec: Bootstrap, arch: str, flavor: str, cache: Cache, mirror: str | None = None) -> BaseTarball:
    """The base tarball for arch ('devel' or 'runtime' package set), bootstrapping if not cached."""
    mirror = mirror or spec.mirror
    key = spec_key(spec, arch, flavor, spec.mirror)
    record = cache.root / "base" / f"{key}.json"
    if record.is_file():
        known = json.loads(record.read_text())
        if cache.has(known["sha256"]):
            return BaseTarball(known["sha256"], known["packages"])
    if not shutil.which("mmdebstrap"):
        raise StackbuildError("mmdebstrap is not installed: run `python -m builder.hostsetup --docker`")
    packages = spec.packages if flavor == "devel" else spec.runtime_packages
    cache.root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache._tmp_root()) as tmp:
        out = Path(tmp) / "base.tar"
        cmd = [
            "mmdebstrap",
            f"--variant={spec.variant}",
            f"--architectures={DEBIAN_ARCH[arch]}",
            "--mode=root" if os.geteuid() == 0 else "--mode=unshare",
            '--aptopt=Acquire::Retries "3"',
            # Docs and apt lists are not needed in an image and only add size.
            "--dpkgopt=path-exclude=/usr/share/doc/*",
            "--dpkgopt=path-exclude=/usr/share/man/*",
            '--customize-hook=rm -rf "$1"/var/lib/apt/lists/*',
        ]
        if packages:
            cmd.append("--include=" + ",".join(packages))
        cmd += [spec.suite, str(out), mirror]
        env = dict(os.environ, SOURCE_DATE_EPOCH=str(SOURCE_DATE_EPOCH))
        run = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if run.returncode != 0:
            tail = "\n".join(run.stderr.strip().splitlines()[-8:])
            raise StackbuildError(f"mmdebstrap {spec.suite} ({arch}, {flavor}) failed:\n{tail}")
        versions = dpkg_versions(out)
        sha = cache._commit(out, None, "base tarball")
    record.parent.mkdir(parents=True, exist_ok=True)
    tmp_record = record.with_suffix(".tmp")
    tmp_record.write_text(json.dumps({"sha256": sha, "packages": versions}, indent=1))
    tmp_record.replace(record)
    return BaseTarball(sha, versions)
