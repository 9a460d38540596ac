"""A lock agrees with its manifest: checked on every read, so a lock cannot override what the
manifest pins (a resealed lock pointing a package at another URL, a base at another image).

Fields only the lock has (commits, tree hashes, sha256 the manifest leaves open) are checked
for shape when read and re-resolved by `lock --check`.
"""

from __future__ import annotations

from collections.abc import Iterator

from builder.inputs import base_kinds, package_kinds
from builder.inputs.source_kinds import kind_of
from builder.lock.locked import (
    Lock,
    LockedComponent,
    LockedPackage,
)
from builder.manifest.components import Component
from builder.manifest.graph import topological_order
from builder.manifest.model import Manifest
from builder.manifest.toolkit import PACKAGE_ROLES, Package


def _differs(field: str, locked: object, wanted: object) -> Iterator[str]:
    if locked != wanted:
        yield f"{field}: the lock has {locked!r}, the manifest {wanted!r}"


def _toolkit_and_base(lock: Lock, manifest: Manifest) -> Iterator[str]:
    yield from _differs("stack", lock.stack, manifest.name)
    toolkit = manifest.toolkit
    for name in ("vendor", "version", "chip"):
        yield from _differs(f"toolkit.{name}", getattr(lock.toolkit, name), getattr(toolkit, name))
    kind = base_kinds.kind_of(manifest.base)
    if lock.base.kind != kind.tag:
        yield f"base: the lock has a {lock.base.kind} base, the manifest does not"
    else:
        yield from kind.differences(lock.base, manifest.base)


def _components(lock: Lock, manifest: Manifest) -> Iterator[str]:
    yield from _differs("components", [c.id for c in lock.components], [c.id for c in manifest.components])
    yield from _differs("order", lock.order, topological_order({c.id: c.depends_on for c in manifest.components}))
    wanted = {c.id: c for c in manifest.components}
    for comp in lock.components:
        if comp.id not in wanted:
            continue
        spec = wanted[comp.id]
        yield from _differs(f"components.{comp.id}.depends_on", comp.depends_on, spec.depends_on)
        yield from _differs(f"components.{comp.id}.network", comp.network, spec.network)
        offline = {u.path for u in lock.unresolved if u.kind == "fetch" and u.component == comp.id}
        yield from _fetch_differences(comp, spec, offline)
        kind = kind_of(comp.source)
        if kind is not kind_of(spec.source):
            yield f"components.{comp.id}.source: the lock has a {kind.tag} source, the manifest does not"
            continue
        wanted_entry = kind.entry(spec.source)
        for key, pinned in kind.entry(comp.source).items():
            yield from _differs(f"components.{comp.id}.source.{key}", pinned, wanted_entry[key])


def _fetch_differences(locked: LockedComponent, spec: Component, unresolved: set[str]) -> Iterator[str]:
    """Where the files a component's build needs are not the ones the manifest names (url, place, a pin);
    those the lock records as unresolved are not pinned."""
    field = f"components.{spec.id}.fetch"
    asked_for = [f for f in spec.fetch if f.to not in unresolved]
    yield from _differs(field, [(f.url, f.to) for f in locked.fetched], [(f.url, f.to) for f in asked_for])
    for pinned, asked in zip(locked.fetched, asked_for, strict=False):
        if asked.sha256 is not None:
            yield from _differs(f"{field}[{asked.to}].sha256", pinned.sha256, asked.sha256)


def package_differences(field: str, locked: LockedPackage, spec: Package) -> Iterator[str]:
    """Where a locked installer is not the one the manifest's entry names (file, its kind's fields such
    as url or command, a pin)."""
    yield from _differs(f"{field}.file", locked.file, spec.file)
    kind = package_kinds.kind_of(locked)
    if kind is package_kinds.kind_of(spec):
        wanted = kind.entry(spec)
        for key, pinned in kind.entry(locked).items():
            yield from _differs(f"{field}.{key}", pinned, wanted[key])
    else:
        yield f"{field}: the lock has a {locked.kind} package, the manifest does not"
    if spec.sha256 is not None:
        yield from _differs(f"{field}.sha256", locked.sha256, spec.sha256)


def _packages(lock: Lock, manifest: Manifest) -> Iterator[str]:
    yield from _differs("architectures", sorted(lock.architectures), sorted(manifest.platform.architectures))
    for arch, section in lock.architectures.items():
        roles = [p.role for p in section.packages]
        wanted_roles = [r for r in PACKAGE_ROLES if arch in manifest.toolkit.packages.of(r)]
        if roles:  # none: the architecture is not resolved yet (`lock --arch`); building it says so
            yield from _differs(f"architectures.{arch}.packages", sorted(roles), sorted(wanted_roles))
        for package in section.packages:
            spec = manifest.toolkit.packages.of(package.role).get(arch)
            if spec is not None:
                yield from package_differences(f"architectures.{arch}.packages.{package.role}", package, spec)


def disagreements(lock: Lock, manifest: Manifest) -> list[str]:
    """Every field where the lock says something else than the manifest pins."""
    return [*_toolkit_and_base(lock, manifest), *_components(lock, manifest), *_packages(lock, manifest)]
