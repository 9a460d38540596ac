"""Locking system packages: each scope's .deb closure on its base, pinned and downloaded.

Scopes: the stack's (installed into the devel base), the runtime base's, and per component its
own with its dependencies' (resolved on the devel base with the stack's, pinned beyond them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict

from builder.inputs import base_kinds, debs
from builder.inputs.bootstrap import FLAVORS, Flavor
from builder.inputs.site import SiteConfig
from builder.lock.locked import Lock, LockedDeb, LockedSystem, LockedTarball
from builder.manifest.graph import transitive_deps
from builder.manifest.model import Manifest
from builder.model.arch import Arch
from builder.model.canonical import digest
from builder.model.errors import StackbuildError
from builder.model.say import Say
from builder.store.cache import Cache
from builder.store.http import HttpClient

# Scope keys no component id can take (ids start with a letter or digit).
STACK_SCOPE = ""
RUNTIME_SCOPE = "@runtime"
COMPILE_CACHE_SCOPE = "@compile-cache"
ResolveDebs = Callable[..., dict[str, list[debs.Deb]]]


def requested(manifest: Manifest) -> list[tuple[str, list[str]]]:
    """(scope, packages) resolved on the devel base: the stack's, then each component's with its
    dependencies' and the stack's."""
    needs = transitive_deps({c.id: list(c.depends_on) for c in manifest.components})
    scopes = [(STACK_SCOPE, list(manifest.system_packages))]
    for comp in manifest.components:
        own = [p for d in [*needs[comp.id], comp.id] for p in manifest.component(d).system_packages]
        if own:
            scopes.append((comp.id, list(dict.fromkeys([*manifest.system_packages, *own]))))
    if manifest.compile_cache:  # resolved beside the stack's, as a component's are: only what they lack is pinned
        scopes.append((COMPILE_CACHE_SCOPE, list(dict.fromkeys([*manifest.system_packages, manifest.compile_cache]))))
    return scopes


def requested_runtime(manifest: Manifest) -> list[tuple[str, list[str]]]:
    return [(RUNTIME_SCOPE, list(manifest.runtime_system_packages))] if manifest.runtime_system_packages else []


def wants_system(manifest: Manifest) -> bool:
    return any(packages for _, packages in [*requested(manifest), *requested_runtime(manifest)])


def base_ready(manifest: Manifest, bases: dict[Flavor, LockedTarball]) -> bool:
    """Whether the architecture's base is there to resolve system packages on: an image is; a base
    made here once the lock has its tarballs."""
    return bool(bases) or base_kinds.kind_of(manifest.base).recipe(manifest.base) is None


def base_refs(manifest: Manifest, bases: dict[Flavor, LockedTarball], cache: Cache) -> dict[Flavor, debs.BaseRef]:
    """What each base is, to resolve on: the image (both flavors), or the tarballs made here."""
    if (image := base_kinds.kind_of(manifest.base).pinned_image(manifest.base)) is not None:
        return {flavor: debs.BaseRef(image=image) for flavor in FLAVORS}
    return {flavor: debs.BaseRef(tarball=cache.blob(tarball.sha256)) for flavor, tarball in bases.items()}


def spec_key(manifest: Manifest, arch: Arch, bases: dict[Flavor, LockedTarball]) -> str:
    repositories = [r.model_dump(mode="json") for r in manifest.apt_repositories]
    scopes = [*requested(manifest), *requested_runtime(manifest)]
    shas = {flavor: tarball.sha256 for flavor, tarball in sorted(bases.items())}
    image = base_kinds.kind_of(manifest.base).pinned_image(manifest.base)
    return digest({"scopes": scopes, "repositories": repositories, "arch": arch.value, "bases": shas, "image": image})


def sources(manifest: Manifest, arch: Arch) -> list[debs.AptSource]:
    return [debs.AptSource(r.url_for(arch), r.suite, tuple(r.components), r.trusted) for r in manifest.apt_repositories]


def mirrors(deb: LockedDeb, site: SiteConfig) -> list[str]:
    return [site.rewrite(deb.repository), *site.deb_snapshots]


def resolve_all(
    manifest: Manifest,
    arch: Arch,
    bases: dict[Flavor, LockedTarball],
    site: SiteConfig,
    cache: Cache,
    resolve_debs: ResolveDebs,
) -> dict[str, list[debs.Deb]]:
    """Every scope's closure as apt gives it today: devel scopes on the devel base, the runtime's on its base."""
    repos, refs = sources(manifest, arch), base_refs(manifest, bases, cache)
    devel, runtime = requested(manifest), requested_runtime(manifest)
    if refs["runtime"] == refs["devel"]:  # one image for both: one apt root, one `apt-get update`
        return resolve_debs(refs["devel"], repos, [*devel, *runtime], arch, site.rewrite, cache)
    found = resolve_debs(refs["devel"], repos, devel, arch, site.rewrite, cache)
    if runtime:
        found |= resolve_debs(refs["runtime"], repos, runtime, arch, site.rewrite, cache)
    return found


def pinned(resolved: dict[str, list[debs.Deb]], key: str | None) -> LockedSystem:
    """The lock's section from resolved closures: components pin only what the stack's do not install."""
    stack = [LockedDeb(**asdict(d)) for d in resolved.get(STACK_SCOPE, [])]
    in_stack = {(d.name, d.version) for d in stack}
    beyond = {
        scope: [LockedDeb(**asdict(d)) for d in found if (d.name, d.version) not in in_stack]
        for scope, found in resolved.items()
        if scope not in (STACK_SCOPE, RUNTIME_SCOPE)
    }
    tool = beyond.pop(COMPILE_CACHE_SCOPE, [])
    runtime = [LockedDeb(**asdict(d)) for d in resolved.get(RUNTIME_SCOPE, [])]
    return LockedSystem(stack=stack, runtime=runtime, components=beyond, compile_cache=tool, spec_key=key)


def lock_system(
    manifest: Manifest,
    arch: Arch,
    bases: dict[Flavor, LockedTarball],
    previous: Lock | None,
    wanted: bool,
    site: SiteConfig,
    cache: Cache,
    say: Say,
    resolve_debs: ResolveDebs = debs.resolve_on,
) -> LockedSystem:
    """The arch's system section: resolved if asked for, else the previous lock's while its spec matches."""
    if not wants_system(manifest):
        return LockedSystem()
    if not base_ready(manifest, bases):
        return LockedSystem()  # no base locked for this architecture yet: nothing to resolve against
    key = spec_key(manifest, arch, bases)
    old = previous.architectures.get(arch) if previous else None
    if not wanted:
        return old.system if old and old.system.spec_key == key else LockedSystem()
    say(f"  system packages {arch}: resolving with apt against the base")
    system = pinned(resolve_all(manifest, arch, bases, site, cache, resolve_debs), key)
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


def every_deb(system: LockedSystem) -> list[LockedDeb]:
    every = [*system.stack, *system.runtime, *system.devel(), *system.compile_cache]
    return list({d.sha256: d for d in every}.values())


def download(system: LockedSystem, site: SiteConfig, cache: Cache, say: Say) -> None:
    """Every pinned .deb into the cache, so a build needs no mirror."""
    all_debs: Sequence[LockedDeb] = every_deb(system)
    client = HttpClient(headers=site.headers)
    for deb in all_debs:
        if cache.has(deb.sha256):
            continue
        if debs.fetch(plain(deb), cache, site.deb_dirs, mirrors(deb, site), client) is None:
            raise StackbuildError(f"{deb.file} ({deb.name} {deb.version}) could not be downloaded from its repository")
    say(f"  system packages: {len(all_debs)} .debs pinned")


def plain(deb: LockedDeb) -> debs.Deb:
    return debs.Deb(**deb.model_dump())
