"""Lock format migrations: one function per step, applied in order up to LOCK_VERSION.

Each step takes the parsed JSON of one version and returns the next version's. A lock of an
older version is checked against its own version's digest before it is migrated. A step moves the
lock's frame; each pin of a kind of source or base is upgraded by its kind (`upgrades`, through
builder.model.plugins), so a kind that changes its pin's format says how in its own module.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from builder.model import plugins
from builder.model.errors import InputError

Data = dict[str, Any]
# A manifest digest from before the canonical form: it can never equal a current one, so a
# build asks for a relock (and says why) while every other pin stays readable.
LEGACY_DIGEST_PREFIX = "legacy-v1:"


def _v1_digest(data: Data) -> str:
    body = {k: v for k, v in data.items() if k != "lock_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _v1_package(package: Data) -> Data:
    """v1 named a package's role `kind`; its kind was told by the `generate` field it wrote."""
    tag = "generate" if package.get("generate") is not None else "download"
    return plugins.upgraded(plugins.PACKAGES, package, 1, tag=tag)


def v1_to_v2(data: Data) -> Data:
    """v1: flat package list with an `arch` each, base tarballs keyed arch -> flavor, toolkit fields at the top."""
    if data.get("lock_sha256") != _v1_digest(data):
        raise InputError("lock_sha256 does not match its content (edited by hand?): relock")
    base = data["base"]
    arches = sorted({p["arch"] for p in data["packages"]} | set(base.get("tarballs", {})))
    sections = {
        arch: {
            "packages": [_v1_package(p) for p in data["packages"] if p["arch"] == arch],
            "base": base.get("tarballs", {}).get(arch, {}),
        }
        for arch in arches
    }
    # v1 kept the tarballs in the base; each kind says what its pin keeps of the rest.
    pinned = {k: v for k, v in base.items() if k != "tarballs"}
    return {
        "lock_version": 2,
        "stack": data["stack"],
        "manifest_sha256": LEGACY_DIGEST_PREFIX + data["manifest_sha256"],
        "toolkit": {"vendor": data["toolkit_vendor"], "version": data["toolkit_version"], "chip": data["chip"]},
        "base": plugins.upgraded(plugins.BASES, pinned, 1),
        "components": [
            {"id": c["id"], "depends_on": c["depends_on"], "source": plugins.upgraded(plugins.SOURCES, c["source"], 1)}
            for c in data["components"]
        ],
        "order": data["order"],
        "architectures": sections,
    }


MIGRATIONS: dict[int, Callable[[Data], Data]] = {1: v1_to_v2}


def migrate(data: Data, target: int) -> tuple[Data, int | None]:
    """(data at the target version, the version it was read at if that was older)."""
    version = data.get("lock_version")
    start = version
    while version != target:
        step = MIGRATIONS.get(version) if isinstance(version, int) else None
        if step is None:
            raise InputError(f"lock_version {version!r} is not one this stackbuild reads (1..{target}): relock")
        data = step(data)
        version = data["lock_version"]
    return data, (start if start != target else None)
