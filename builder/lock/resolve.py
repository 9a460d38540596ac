"""Assembling a lock from a manifest: each component's source and fetch files, then each
architecture's section (installer packages, base tarballs, system and Python packages), the
resolving of each part left to the Resolver and what a relock keeps to builder.lock.relock."""

from __future__ import annotations

from dataclasses import asdict

from builder.inputs import base_kinds, bootstrap, wheels
from builder.inputs.source_kinds import kind_of
from builder.lock.agree import package_differences
from builder.lock.locked import (
    LOCK_VERSION,
    ArchSection,
    Lock,
    LockedComponent,
    LockedFetch,
    LockedPackage,
    LockedSystem,
    LockedTarball,
    LockedToolkit,
    LockedWheel,
    Unresolved,
)
from builder.lock.relock import UPDATE_ALL, kept_or_unresolved, kept_source, still_unresolved, unresolved_part
from builder.lock.resolver import Resolver
from builder.lock.system import lock_system
from builder.manifest.components import Component
from builder.manifest.graph import topological_order
from builder.manifest.loading import manifest_digest
from builder.manifest.model import Manifest
from builder.manifest.toolkit import PACKAGE_ROLES
from builder.model.arch import Arch
from builder.model.canonical import digest
from builder.model.errors import SourceError, SourceNoAnswer, StackbuildError, Unreached
from builder.store.http import NoAnswer


def default_arches(manifest: Manifest) -> list[Arch]:
    """This host's architecture if the stack has it, else the stack's first."""
    listed = manifest.platform.architectures
    return [a for a in listed if a == Arch.host()] or [listed[0]]


def _section(
    manifest: Manifest, arch: Arch, wanted: bool, previous: Lock | None, update: str | None, resolver: Resolver
) -> tuple[ArchSection, list[Unresolved]]:
    """The arch's section, and the parts of it no source answered for (left out, never guessed). The
    installer packages first: a wrong one at hand is refused before any base is bootstrapped."""
    pinned = _packages(manifest, arch, wanted, previous, resolver)
    unresolved = []
    try:
        bases = _bases(manifest, arch, wanted, previous, resolver)
    except NoAnswer as err:  # the lock's tarballs while their spec is the manifest's, else unresolved
        bases = _bases(manifest, arch, False, previous, resolver)
        unresolved += kept_or_unresolved(bool(bases), "base", arch, err, resolver)
    try:
        system = _system(manifest, arch, bases, previous, wanted, resolver)
    except NoAnswer as err:
        system = _system(manifest, arch, bases, previous, False, resolver)
        unresolved += kept_or_unresolved(bool(system.spec_key), "system", arch, err, resolver)
    python, python_keys, no_index = _python(manifest, arch, wanted, previous, update, resolver)
    section = ArchSection(packages=pinned, base=bases, system=system, python=python, python_keys=python_keys)
    return section, unresolved + no_index


def _packages(
    manifest: Manifest, arch: Arch, wanted: bool, previous: Lock | None, resolver: Resolver
) -> list[LockedPackage]:
    pinned: list[LockedPackage] = []
    old = previous.architectures.get(arch) if previous else None
    for role in PACKAGE_ROLES:
        package = manifest.toolkit.packages.of(role).get(arch)
        if package is None:
            continue
        if not wanted:  # --arch: other architectures keep their pins while the manifest's entry is the same
            kept = old.package(role) if old else None
            if kept is not None and not any(package_differences(role, kept, package)):
                pinned.append(kept)
            continue
        resolver.say(f"  package {role} {arch}: {package.file}")
        pinned.append(resolver.package(role, package, manifest.toolkit))
    return pinned


def _system(
    manifest: Manifest, arch: Arch, bases: dict[bootstrap.Flavor, LockedTarball], previous: Lock | None, wanted: bool,
    resolver: Resolver,
) -> LockedSystem:  # fmt: skip
    site, cache, say = resolver.site, resolver.cache, resolver.say
    return lock_system(manifest, arch, bases, previous, wanted, site, cache, say, resolver.resolve_debs)


def _python(
    manifest: Manifest, arch: Arch, wanted: bool, previous: Lock | None, update: str | None, resolver: Resolver
) -> tuple[dict[str, list[LockedWheel]], dict[str, str], list[Unresolved]]:
    """Each component's python_packages as the wheels its Python on arch installs, with what they were
    resolved from. An architecture not asked for, or a component other than --update's, keeps its pins
    while that is unchanged: a relock never moves unpinned dependencies nobody asked to move."""
    target = wheels.Target.of_stack(manifest, arch)
    index = wheels.index_of(manifest, resolver.site)
    old = previous.architectures.get(arch) if previous else None
    found, keys, unresolved = {}, {}, []
    for comp in manifest.components:
        if not comp.python_packages:
            continue
        key = digest({"requirements": comp.python_packages, "index": index, "target": asdict(target)})
        keep = not wanted or update not in (None, UPDATE_ALL, comp.id)
        if keep and old is not None and old.python_keys.get(comp.id) == key:
            found[comp.id], keys[comp.id] = old.python[comp.id], key
            continue
        if not wanted:
            continue  # --arch: another architecture is not resolved
        resolver.say(f"  python packages {comp.id} {arch}: {', '.join(comp.python_packages)}")
        try:
            pinned = wheels.resolve(
                comp.python_packages, index, resolver.manifest_dir, target, resolver.cache, resolver.site.rewrite
            )
        except NoAnswer as err:
            still = old is not None and old.python_keys.get(comp.id) == key
            if still and old is not None:
                found[comp.id], keys[comp.id] = old.python[comp.id], key
            unresolved += kept_or_unresolved(still, "python", arch, err, resolver, comp.id)
            continue
        found[comp.id], keys[comp.id] = [LockedWheel(**asdict(w)) for w in pinned], key
    return found, keys, unresolved


def _bases(
    manifest: Manifest, arch: Arch, wanted: bool, previous: Lock | None, resolver: Resolver
) -> dict[bootstrap.Flavor, LockedTarball]:
    """The arch's base tarballs (none for a pulled base): made if asked for, else the previous lock's
    while their recipe matches."""
    recipe = base_kinds.kind_of(manifest.base).recipe(manifest.base)
    if recipe is None:
        return {}
    if wanted:
        return bootstrap.each_flavor(lambda flavor: resolver.tarball(recipe, arch, flavor))
    old = previous.architectures.get(arch) if previous else None
    kept = {
        flavor: tarball
        for flavor, tarball in (old.base.items() if old else [])
        if tarball.spec_key == recipe.key(arch, flavor, resolver.manifest_dir)
    }
    return kept if len(kept) == len(bootstrap.FLAVORS) else {}


def _fetched(comp: Component, previous: Lock | None, resolver: Resolver) -> tuple[list[LockedFetch], list[Unresolved]]:
    """The component's fetch: entries pinned and in the cache, and those whose host gave no answer; any
    other failure names the component and the file."""
    before = {f.to: f for c in (previous.components if previous else []) if c.id == comp.id for f in c.fetched}
    pinned, unresolved = [], []
    for wanted in comp.fetch:
        try:
            pinned.append(resolver.fetched(wanted, before.get(wanted.to)))
        except NoAnswer as err:
            unresolved.append(unresolved_part("fetch", None, err, component=comp.id, path=wanted.to))
        except StackbuildError as err:
            raise StackbuildError(f"component {comp.id}: fetch {wanted.to}: {err}") from err
    return pinned, unresolved


def resolve(
    manifest: Manifest,
    resolver: Resolver,
    arches: list[Arch] | None = None,
    previous: Lock | None = None,
    update: str | None = None,
) -> Lock:
    """A lock for the manifest. With previous, each git component keeps its commit while its entry is
    unchanged and its source serves it, but the one update names (all with UPDATE_ALL)."""
    arches = arches or default_arches(manifest)
    # Sources first: they are cheap and catch configuration mistakes before any download.
    components, unresolved = [], []
    for comp in manifest.components:
        try:
            source = kept_source(previous, update, comp.id, comp.source, resolver) or resolver.source(comp.source)
        except SourceNoAnswer as err:  # no pin to keep: nothing to lock it with
            raise Unreached(
                f"component {comp.id}: {err}: lock where that host answers, or point the URL at a mirror with "
                f"url_rewrites in {resolver.site.where} (docs/manifest.md, local mirrors)"
            ) from err
        except SourceError as err:
            raise SourceError(f"component {comp.id}: {err}") from err
        resolver.say(f"  component {comp.id}: {kind_of(source).describe(source).pin}")
        fetched, offline = _fetched(comp, previous, resolver)
        unresolved += offline
        components.append(
            LockedComponent(
                id=comp.id, depends_on=list(comp.depends_on), source=source, network=comp.network, fetched=fetched
            )
        )
    sections = {}
    for arch in manifest.platform.architectures:
        sections[arch], offline = _section(manifest, arch, arch in arches, previous, update, resolver)
        if arch in arches:
            unresolved += offline
        else:
            unresolved += still_unresolved(manifest, previous, arch, sections[arch], resolver.site)
    return Lock(
        lock_version=LOCK_VERSION,
        stack=manifest.name,
        manifest_sha256=manifest_digest(manifest),
        toolkit=LockedToolkit(
            vendor=manifest.toolkit.vendor, version=manifest.toolkit.version, chip=manifest.toolkit.chip
        ),
        base=base_kinds.kind_of(manifest.base).lock(manifest.base),
        components=components,
        order=topological_order({c.id: c.depends_on for c in manifest.components}),
        architectures=sections,
        unresolved=unresolved,
    )
