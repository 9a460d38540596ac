"""`stackbuild new`: a manifest for a CANN release, with the catalog's real packages."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version
from pydantic import ValidationError

from builder.manifest import catalog
from builder.manifest.model import ROOT, RunUser
from builder.manifest.upstream import upstream_of
from builder.model.arch import ARCHITECTURES
from builder.model.errors import InputError, StackbuildError


def catalog_packages(version: str, chip: str, arches: Sequence[str]) -> dict[str, dict[str, dict[str, str]]]:
    release = catalog.release(version)
    if release is None or not release.files:
        known = ", ".join(v for v, r in catalog.releases().items() if r.files)
        raise InputError(f"CANN {version} has no package list in the catalog (releases with one: {known})")
    if chip not in release.chips:
        raise InputError(f"CANN {version} has no packages for chip {chip} (chips: {', '.join(release.chips)})")
    packages: dict[str, dict[str, dict[str, str]]] = {}
    for kind in ("toolkit", "ops", "nnal"):
        for arch in arches:
            entry = release.package(kind, arch, chip)
            if entry is not None:
                packages.setdefault(kind, {})[arch] = {"file": entry.filename, "url": entry.url, "sha256": entry.sha256}
    if "toolkit" not in packages:
        raise StackbuildError(f"the catalog of CANN {version} lists no toolkit package")
    return packages


TEMPLATE = "templates/cann.yaml"
# A stack without an upstream layer left still proves its toolkit (the official CANN images' kind).
TOOLKIT_SMOKE = {
    "command": 'test -f "$ASCEND_TOOLKIT_HOME/$(uname -m)-linux/ascend_toolkit_install.info" && echo toolkit ready',
    "expect": "toolkit ready",
}


def packaged_template(version: str) -> dict[str, Any]:
    """The template shipped with stackbuild (works in an empty directory)."""
    text = resources.files("builder.manifest").joinpath(TEMPLATE).read_text()
    data: dict[str, Any] = yaml.safe_load(text.replace("@CANN_VERSION@", version))
    return data


def _upstream_components(data: dict[str, Any], version: str, chip: str) -> set[str]:
    """Keep the public upstream components whose requirements hold, at the ref pairing with version; the ids dropped."""
    kept, dropped = [], set()
    for comp in data["components"]:
        source = comp["source"]
        known = upstream_of(source["git"]) if "git" in source else None
        if known is not None:
            if not known[1].supports(version, chip):
                dropped.add(comp["id"])
                continue
            source["ref"] = known[1].ref(version)
        kept.append(comp)
    for comp in kept:  # a --from stack's component built on one dropped builds without it
        if "depends_on" in comp:
            comp["depends_on"] = [d for d in comp["depends_on"] if d not in dropped]
    data["components"] = kept
    return dropped


def _pin_torch(data: dict[str, Any], version: str) -> None:
    """A component's unpinned torch-npu (and unpinned torch beside it) pinned to the catalog's newest
    pairing for the release that fits a torch it already pins (torch-npu X.Y.Z[.postN] is built
    against torch X.Y.Z); left as they are without one."""
    for comp in data["components"]:
        lines = comp.get("python_packages", [])
        names = [canonicalize_name(Requirement(line).name) for line in lines]
        if "torch-npu" not in [canonicalize_name(line) for line in lines]:
            continue  # no torch-npu, or one pinned already
        torch = next((Requirement(line) for line, name in zip(lines, names, strict=True) if name == "torch"), None)
        paired = [
            npu
            for npu in catalog.paired_torch_npu(version)
            if torch is None or torch.specifier.contains(Version(npu).base_version)
        ]
        if not paired:
            continue
        pins = {"torch-npu": f"torch-npu=={paired[-1]}", "torch": f"torch=={Version(paired[-1]).base_version}"}
        lines[:] = [pins.get(canonicalize_name(line), line) for line in lines]


def new_manifest(template: dict[str, Any], version: str, chip: str, name: str) -> dict[str, Any]:
    """template: a manifest as data (a stack's, or the packaged one)."""
    data = copy.deepcopy(template)
    _pin_torch(data, version)
    arches = [a for a in ARCHITECTURES if a in data["platform"]["architectures"]] or ARCHITECTURES
    packages = catalog_packages(version, chip, arches)  # raises, with the known releases, if none
    release = catalog.releases()[version]
    dropped = _upstream_components(data, version, chip)
    if not data["components"]:  # nothing compiles: its lock would pin ccache's .debs for no build
        data.pop("compile_cache", None)
    if any(f"/opt/stack/{cid}/" in data["smoke"]["command"] for cid in dropped):
        data["smoke"] = dict(TOOLKIT_SMOKE)
    layers = ", ".join(c["id"] for c in data["components"])
    head = {
        "schema": data.pop("schema"),
        "name": name,
        "description": f"CANN {version} on {chip}" + (f" with {layers}" if layers else " (toolkit only)"),
        "toolkit": {"vendor": "huawei", "version": version, "chip": chip, "packages": packages},
        "host": {"driver": release.driver} if release.driver else {"driver": "unknown"},
    }
    return head | {k: v for k, v in data.items() if k not in head}


def user_entry(given: str) -> str | dict[str, Any]:
    """--user NAME:UID:GID (or root) as the manifest's `user`, checked as the manifest checks it."""
    if given == ROOT:
        return ROOT
    name, _, ids = given.partition(":")
    uid, _, gid = ids.partition(":")
    if not (uid.isdigit() and gid.isdigit()):
        raise InputError(f"--user {given[:60]!r}: give NAME:UID:GID, e.g. HwHiAiUser:1000:1000 (`id HwHiAiUser`)")
    try:
        user = RunUser(name=name, uid=int(uid), gid=int(gid))
    except ValidationError as err:
        raise InputError(f"--user {given[:60]!r}: {err.errors()[0]['msg'].removeprefix('Value error, ')}") from None
    return user.model_dump()


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
