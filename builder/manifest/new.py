"""`stackbuild new`: a manifest for a CANN release, with the catalog's real packages."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from builder.manifest import catalog
from builder.manifest.model import Manifest
from builder.model.arch import ARCHITECTURES
from builder.model.errors import InputError, StackbuildError


def catalog_packages(version: str, chip: str, arches: Sequence[str]) -> dict[str, dict[str, dict[str, str]]]:
    release = catalog.release(version)
    if release is None or not release.files:
        known = ", ".join(v for v, r in catalog.releases().items() if r.files)
        raise StackbuildError(f"CANN {version} has no package list in the catalog (releases with one: {known})")
    if chip not in release.chips:
        raise StackbuildError(f"CANN {version} has no packages for chip {chip} (chips: {', '.join(release.chips)})")
    packages: dict[str, dict[str, dict[str, str]]] = {}
    for kind in ("toolkit", "ops", "nnal"):
        for arch in arches:
            entry = release.package(kind, arch, chip)
            if entry is not None:
                packages.setdefault(kind, {})[arch] = {"file": entry.filename, "url": entry.url, "sha256": entry.sha256}
    if "toolkit" not in packages:
        raise StackbuildError(f"the catalog of CANN {version} lists no toolkit package")
    return packages


def new_manifest(template: Manifest, version: str, chip: str, name: str) -> dict[str, Any]:
    arches = [a for a in ARCHITECTURES if a in template.platform.architectures] or ARCHITECTURES
    packages = catalog_packages(version, chip, arches)  # raises, with the known releases, if none
    release = catalog.releases()[version]
    data = template.model_dump(mode="json", by_alias=True, exclude_none=True)
    data["name"] = name
    data["description"] = f"CANN {version} on {chip}, from the {template.name} stack"
    data["toolkit"] = {
        "vendor": "huawei",
        "version": version,
        "chip": chip,
        "packages": packages,
    }
    data["host"] = {"driver": release.driver} if release.driver else {"driver": "unknown"}
    return data


def write_manifest(data: dict[str, Any], path: Path, source_note: str) -> None:
    header = f"# Written by `stackbuild new` from {source_note}. Review, then `stackbuild lock {data['name']}`.\n"
    text = header + yaml.safe_dump(data, sort_keys=False, width=110)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x") as out:  # never over an existing file
            out.write(text)
    except FileExistsError as err:
        raise InputError(f"{path} exists: choose another name with -o") from err
    except OSError as err:
        raise InputError(f"{path}: cannot write there: {err.strerror or err}") from err
