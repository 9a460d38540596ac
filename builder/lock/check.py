"""`lock --check`: why a lock no longer matches its manifest and the world (moved refs, changed trees)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from builder.inputs import package_kinds
from builder.inputs.source_kinds import PinAtSource, kind_of
from builder.lock.agree import disagreements
from builder.lock.locked import ArchSection, Lock, LockedDeb, LockedSource
from builder.lock.migrate import LEGACY_DIGEST_PREFIX
from builder.lock.relock import same_entry
from builder.lock.resolver import Resolver
from builder.lock.system import base_ready, every_deb, spec_key, wants_system
from builder.manifest.loading import manifest_digest
from builder.manifest.model import Manifest
from builder.model.arch import Arch
from builder.model.errors import SourceUnreachable, StackbuildError
from builder.model.retry import RetryPolicy
from builder.store.http import DownloadError, HttpClient


def manifest_drift(lock: Lock, manifest: Manifest, manifest_name: str) -> str | None:
    digest = manifest_digest(manifest)
    if lock.manifest_sha256 == digest:
        return None
    if lock.manifest_sha256.startswith(LEGACY_DIGEST_PREFIX):
        return (
            f"manifest: locked by an older stackbuild (lock_version 1), its digest cannot be compared ({manifest_name})"
        )
    return f"manifest: sha256 {lock.manifest_sha256[:12]} -> {digest[:12]} ({manifest_name} changed)"


def _source_drift(comp_id: str, old: LockedSource, new: LockedSource) -> str | None:
    kind = kind_of(old)
    if kind is not (now := kind_of(new)):
        return f"component {comp_id}: source changed from {kind.tag} to {now.tag}"
    line = kind.drift(old, new)
    return f"component {comp_id}: {line}" if line else None


@dataclass(frozen=True)
class Checked:
    """What `lock --check` found: drift (the lock no longer matches), and the sources it could not
    reach to compare at all (an outage is not drift)."""

    drift: list[str]
    unreachable: list[str]
    # Pins behind their branch (still served): a plain `lock` keeps them, so no drift; said with the
    # `lock --update COMPONENT` that moves each.
    behind: list[str] = field(default_factory=list)


def _moved_pin(comp_id: str, upstream: PinAtSource | None, behind: list[str], stack: str) -> list[str] | None:
    """None while the locked ref names the locked pin (or its kind's pins do not move upstream); else the
    drift of the moved pin as a plain `lock` sees it: none while the source still serves the locked pin
    (it stays, and a note in behind names the --update that moves it)."""
    if upstream is None or upstream.now == upstream.pinned:
        return None
    if not upstream.served:
        return [
            f"component {comp_id}: {upstream.ref} moved {upstream.pinned} -> {upstream.now}, and the locked commit "
            "is no longer served"
        ]
    behind.append(
        f"component {comp_id}: {upstream.ref} moved upstream {upstream.pinned[:12]} -> {upstream.now[:12]}; the lock "
        f"keeps {upstream.pinned[:12]} (run `stackbuild lock {stack} --update {comp_id}` to move it)"
    )
    return []


def _component_drift(
    lock: Lock, manifest: Manifest, resolver: Resolver, unreachable: list[str], behind: list[str], stack: str
) -> list[str]:
    problems = []
    locked = {c.id: c for c in lock.components}
    for comp in manifest.components:
        if comp.id not in locked:
            problems.append(f"component {comp.id}: not in the lock")
            continue
        old = locked[comp.id].source
        try:
            moved = (
                _moved_pin(comp.id, kind_of(old).upstream(old, resolver), behind, stack)
                if same_entry(old, comp.source)
                else None
            )
            if moved is not None:
                problems += moved
                continue
            new = resolver.source(comp.source)
        except SourceUnreachable as err:
            unreachable.append(f"component {comp.id}: {err}")
            continue
        except StackbuildError as err:
            problems.append(f"component {comp.id}: cannot resolve: {err}")
            continue
        if (line := _source_drift(comp.id, old, new)) is not None:
            problems.append(line)
    problems += [
        f"component {gone}: in the lock but not in the manifest"
        for gone in locked.keys() - {c.id for c in manifest.components}
    ]
    return problems


def _package_drift(lock: Lock, manifest: Manifest, resolver: Resolver) -> list[str]:
    problems = []
    for arch, section in lock.architectures.items():
        for package in section.packages:
            current = manifest.toolkit.packages.of(package.role).get(arch)
            kind = package_kinds.kind_of(package)
            if current is None or package_kinds.kind_of(current) is not kind:
                continue  # none, or one of another kind: a disagreement with the manifest (agree), not drift
            if (line := kind.drift(package, current, resolver)) is not None:
                problems.append(f"package {package.file}: {line}")
    return problems


def stale_system(manifest: Manifest, arch: Arch, section: ArchSection) -> str | None:
    """Why the section's system packages are not the manifest's (another architecture was relocked
    after they changed); None when they are, or when the architecture has no base locked yet."""
    if not wants_system(manifest) or not base_ready(manifest, section.base):
        return None
    if section.system.spec_key == spec_key(manifest, arch, dict(section.base)):
        return None
    return f"has no system packages resolved for {arch} from this manifest"


def _system_drift(lock: Lock, manifest: Manifest) -> list[str]:
    """Stale system sections, but not those the lock records as unresolved (skipped, not drift)."""
    unresolved = {u.arch for u in lock.unresolved if u.kind in ("base", "system")}
    return [
        stale
        for arch, section in lock.architectures.items()
        if arch not in unresolved and (stale := stale_system(manifest, arch, section))
    ]


MIRROR_CHECKS = 8  # .debs asked about side by side: a real stack locks a hundred or more


def mirror_drift(lock: Lock, resolver: Resolver) -> list[str]:
    """Locked .debs their repository no longer serves: the lock still builds (from the cache, the site's
    deb_dirs or snapshots), but a machine without them cannot; reported, never a failure."""
    local = threading.local()  # one HTTP session per worker thread (requests' sessions are not shared)

    def gone(arch: Arch, deb: LockedDeb) -> str | None:
        base = resolver.site.rewrite(deb.repository).rstrip("/")
        try:
            if base.startswith("file://"):
                if not Path(base.removeprefix("file://"), deb.path).is_file():
                    raise DownloadError(f"{deb.path} is not there")
            else:
                if not hasattr(local, "client"):
                    local.client = HttpClient(RetryPolicy(attempts=2, longest=10.0), headers=resolver.site.headers)
                local.client.head(f"{base}/{quote(deb.path)}")
        except DownloadError:
            kept = "in the cache" if resolver.cache.has(deb.sha256) else "NOT in the cache"
            return f"{arch} system package {deb.name} {deb.version}: gone from {deb.repository} ({kept})"
        return None

    debs = [(arch, deb) for arch, section in lock.architectures.items() for deb in every_deb(section.system)]
    with ThreadPoolExecutor(max_workers=MIRROR_CHECKS) as pool:
        return [note for note in pool.map(lambda item: gone(*item), debs) if note]


def check(lock: Lock, manifest: Manifest, resolver: Resolver, manifest_name: str, stack: str = "") -> Checked:
    """Why the lock no longer matches the manifest and the sources (what a plain `lock` would change),
    which sources could not be reached to tell, and which pins are behind their branch; all empty if
    it matches. stack: how `lock` is told the stack (default the lock's name)."""
    problems = [line for line in [manifest_drift(lock, manifest, manifest_name)] if line]
    problems += [f"lock disagrees with the manifest: {line}" for line in disagreements(lock, manifest)]
    problems += _system_drift(lock, manifest)
    unreachable: list[str] = []
    behind: list[str] = []
    problems += _component_drift(lock, manifest, resolver, unreachable, behind, stack or lock.stack)
    problems += _package_drift(lock, manifest, resolver)
    return Checked(problems, unreachable, behind)
