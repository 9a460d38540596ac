"""Locking system packages: each scope's .deb closure on the base, pinned and downloaded."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict

from builder.inputs import debs
from builder.inputs.bootstrap import Flavor
from builder.inputs.site import SiteConfig
from builder.lock.model import Lock, LockedDeb, LockedSystem, LockedTarball
from builder.manifest.graph import transitive_deps
from builder.manifest.model import Manifest
from builder.model.arch import Arch
from builder.model.canonical import digest
from builder.model.errors import StackbuildError
from builder.model.say import Say
from builder.store.cache import Cache
from builder.store.http import HttpClient

STACK_SCOPE = ""


def requested(manifest: Manifest) -> list[tuple[str, list[str]]]:
    """(scope, packages) to resolve: the stack's, then each component's with its dependencies' and the stack's."""
    needs = transitive_deps({c.id: list(c.depends_on) for c in manifest.components})
    scopes = [(STACK_SCOPE, list(manifest.system_packages))]
    for comp in manifest.components:
        own = [p for d in [*needs[comp.id], comp.id] for p in manifest.component(d).system_packages]
        if own:
            scopes.append((comp.id, list(dict.fromkeys([*manifest.system_packages, *own]))))
    return scopes


def wants_system(manifest: Manifest) -> bool:
    return any(packages for _, packages in requested(manifest))


def spec_key(manifest: Manifest, arch: Arch, base_sha256: str) -> str:
    repositories = [r.model_dump(mode="json") for r in manifest.apt_repositories]
    return digest(
        {"scopes": requested(manifest), "repositories": repositories, "arch": arch.value, "base": base_sha256}
    )


def sources(manifest: Manifest) -> list[debs.AptSource]:
    return [debs.AptSource(r.url, r.suite, tuple(r.components), r.trusted) for r in manifest.apt_repositories]


def mirrors(deb: LockedDeb, site: SiteConfig) -> list[str]:
    return [site.rewrite(deb.repository), *site.deb_snapshots]


def lock_system(
    manifest: Manifest,
    arch: Arch,
    bases: dict[Flavor, LockedTarball],
    previous: Lock | None,
    wanted: bool,
    site: SiteConfig,
    cache: Cache,
    say: Say,
    resolve_debs: Callable[..., dict[str, list[debs.Deb]]] = debs.resolve_on,
) -> LockedSystem:
    """The arch's system section: resolved if asked for, else the previous lock's while its spec matches."""
    if not wants_system(manifest) or "devel" not in bases:
        return LockedSystem()
    key = spec_key(manifest, arch, bases["devel"].sha256)
    old = previous.architectures.get(arch) if previous else None
    if not wanted:
        return old.system if old and old.system.spec_key == key else LockedSystem()
    say(f"  system packages {arch}: resolving with apt against the base")
    tarball = cache.blob(bases["devel"].sha256)
    resolved = resolve_debs(tarball, sources(manifest), requested(manifest), arch, site.rewrite, cache)
    stack = [LockedDeb(**asdict(d)) for d in resolved.pop(STACK_SCOPE)]
    in_stack = {(d.name, d.version) for d in stack}
    components = {
        scope: [LockedDeb(**asdict(d)) for d in found if (d.name, d.version) not in in_stack]
        for scope, found in resolved.items()
    }
    system = LockedSystem(stack=stack, components=components, spec_key=key)
    _agree(system)
    download(system, site, cache, say)
    return system


def _agree(system: LockedSystem) -> None:
    """The devel image installs every component's .debs: two versions of one package cannot both go in."""
    chosen: dict[str, tuple[str, str]] = {}
    for scope, found in system.components.items():
        for deb in found:
            other = chosen.setdefault(deb.name, (deb.version, scope))
            if other[0] != deb.version:
                raise StackbuildError(
                    f"system package {deb.name}: component {other[1]} needs {other[0]} but {scope} needs "
                    f"{deb.version}; pin one version (name=version) in both"
                )


def download(system: LockedSystem, site: SiteConfig, cache: Cache, say: Say) -> None:
    """Every pinned .deb into the cache, so a build needs no mirror."""
    all_debs: Sequence[LockedDeb] = [*system.stack, *system.devel()]
    client = HttpClient()
    for deb in all_debs:
        if cache.has(deb.sha256):
            continue
        if debs.fetch(_plain(deb), cache, site.deb_dirs, mirrors(deb, site), client) is None:
            raise StackbuildError(f"{deb.file} ({deb.name} {deb.version}) could not be downloaded from its repository")
    say(f"  system packages: {len(all_debs)} .debs pinned")


def _plain(deb: LockedDeb) -> debs.Deb:
    return debs.Deb(deb.name, deb.version, deb.architecture, deb.repository, deb.path, deb.sha256, deb.size)
