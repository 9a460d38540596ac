"""The real CANN catalog: packages, sha256 and required driver per CANN release.

Read from the data files of Huawei's `ascend-deployer` package
(ascend_deployer/downloader/software/CANN_<ver>.json; covers 8.1.RC1 .. 9.0.0), plus a small
table of older releases from shared/ascend-facts.md (docs package lists).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from packaging.version import Version

from builder.model.chips import CHIPS
from builder.model.errors import StackbuildError


@dataclass(frozen=True)
class CatalogFile:
    filename: str
    url: str
    sha256: str


@dataclass(frozen=True)
class Release:
    version: str
    driver: str | None
    firmware: str | None
    chips: tuple[str, ...]
    files: tuple[CatalogFile, ...]
    source: str

    def package(self, kind: str, arch: str, chip: str) -> CatalogFile | None:
        """The toolkit, ops or nnal file of this release for arch (and chip, for ops)."""
        patterns = {
            "toolkit": rf"^Ascend-cann-toolkit_{re.escape(self.version)}_linux-{arch}\.(zip|run)$",
            # 8.1-8.3 name ops "kernels-<chip>"; 8.5.0+ "<chip>-ops" (A3 upper-case in file names).
            "ops": rf"^Ascend-cann-(kernels-{chip}|{chip}-ops)_{re.escape(self.version)}_linux-{arch}\.(zip|run)$",
            "nnal": rf"^Ascend-cann-nnal_{re.escape(self.version)}_linux-{arch}\.(zip|run)$",
        }
        pattern = re.compile(patterns[kind], re.IGNORECASE)
        return next((f for f in self.files if pattern.match(f.filename)), None)


# Releases before the ascend-deployer catalog (shared/ascend-facts.md, docs package lists).
OLDER_RELEASES = (
    Release("6.3.RC1", "23.0.rc1", "6.3.0.1.241", ("310p",), (), "docs package list (310P only)"),
    Release("7.0.RC1", "23.0.rc3", "6.4.0.4.220", ("910b",), (), "docs package list"),
    Release("7.0.0", "23.0.3", "7.1.0.5.220", ("910b",), (), "docs package list"),
    Release("7.0.1", "23.0.3", "7.1.0.5.220", ("910b",), (), "docs package list"),
    Release("8.0.RC1", "24.1.rc1", "7.1.0.6.220", ("910b",), (), "docs package list"),
)


def _package_dir() -> Path:
    # find_spec locates the package without importing it (its __init__ edits sys.path).
    spec = importlib.util.find_spec("ascend_deployer")
    if spec is None or not spec.submodule_search_locations:
        raise StackbuildError("the ascend-deployer package is not installed: pip install ascend-deployer")
    return Path(next(iter(spec.submodule_search_locations)))


# The roots ascend-deployer verifies Huawei's signed packages against, in the order it tries them
# (jobs.py ResourcePkg: root_ca_g2, then root_ca; both ship in the wheel's scripts/).
HUAWEI_ROOTS = ("Huawei_Integrity_Root_CA_G2.pem", "Huawei_Software_Integriry_Protection_Root_CA.pem")


def huawei_roots() -> tuple[Path, ...]:
    """Huawei's root CAs as the installed ascend-deployer ships them (never copied into this repository)."""
    return tuple(_package_dir() / "scripts" / name for name in HUAWEI_ROOTS)


def _software_dir() -> Path:
    return _package_dir() / "downloader" / "software"


@cache
def framework_pairs(framework: str) -> dict[str, str]:
    """framework version -> the CANN release Huawei pairs it with, from ascend-deployer's
    downloader/version_match.json (keys `<Framework>_<version>`, values `CANN_<release>`), e.g.
    framework_pairs("Torch-npu")["2.9.0"] == "8.5.0"."""
    data = json.loads((_package_dir() / "downloader" / "version_match.json").read_text())
    prefix = f"{framework}_"
    return {
        key.removeprefix(prefix): value.removeprefix("CANN_")
        for key, value in data.items()
        if key.startswith(prefix) and isinstance(value, str)
    }


def paired_torch_npu(release: str) -> list[str]:
    """The torch-npu versions the catalog pairs with a CANN release, oldest first."""
    pairs = framework_pairs("Torch-npu")
    return sorted((npu for npu, cann in pairs.items() if cann == release), key=Version)


@cache
def vendor_headers(vendor: str) -> dict[str, str]:
    """The headers Huawei's own downloader sends with its packages: ascend-deployer's REFERER constant
    (downloader/download_util.py, read without importing it: importing sets up its logging), the same
    `Referer: https://www.hiascend.com/` the official images' wget sends. Other vendors: none."""
    if vendor != "huawei":
        return {}
    source = _package_dir() / "downloader" / "download_util.py"
    for node in ast.parse(source.read_text()).body:
        match node:
            case ast.Assign(targets=[ast.Name(id="REFERER")], value=ast.Constant(value=str(referer))):
                return {"Referer": referer}
    raise StackbuildError(f"{source} no longer sets REFERER: the headers Huawei's package host expects are unknown")


def _release_from_json(path: Path) -> Release:
    data = json.loads(path.read_text())
    driver = next((s["version"] for s in data.get("required_soft", []) if s.get("name") == "NPU"), None)
    files = tuple(CatalogFile(o["filename"], o["url"], o["sha256"]) for o in data.get("other", []))
    chips = tuple(
        chip
        for chip in CHIPS
        if any(re.match(rf"^Ascend-cann-(kernels-{chip}|{chip}-ops)_", f.filename, re.IGNORECASE) for f in files)
    )
    return Release(data["version"], driver, None, chips, files, f"ascend-deployer {path.name}")


@cache
def releases() -> dict[str, Release]:
    found = {r.version: r for r in OLDER_RELEASES}
    for path in sorted(_software_dir().glob("CANN_*.json")):
        release = _release_from_json(path)
        found[release.version] = release
    return found


def release(version: str) -> Release | None:
    return releases().get(version)


def published(file: str) -> CatalogFile | None:
    """The catalog's entry for an installer file name (any release's), with the sha256 it is published with."""
    return next((f for r in releases().values() for f in r.files if f.filename == file), None)
