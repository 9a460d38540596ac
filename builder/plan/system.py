"""The locked .debs of a build, located: each install point's files for its stage's context.

A build makes sure every pinned .deb is at hand before planning (cache, site deb_dirs, the
repository, site snapshots). One served nowhere any more is replaced by what apt resolves
today, with a note (`--frozen` refuses instead), so the stage keys say what is really installed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from builder.inputs import debs
from builder.inputs.contexts import FileItem
from builder.inputs.site import SiteConfig
from builder.lock.model import LockedDeb, LockedSystem
from builder.lock.system import STACK_SCOPE, download, mirrors, requested, sources
from builder.manifest.model import Manifest
from builder.model.arch import Arch
from builder.model.errors import StackbuildError
from builder.model.say import Say
from builder.store.cache import Cache
from builder.store.http import HttpClient

DEVEL_SCOPE = "devel-image"


def scoped(system: LockedSystem) -> dict[str, list[LockedDeb]]:
    """Install point -> its .debs in order: the stack's (toolkit stage), each component's, the devel image's."""
    found = {STACK_SCOPE: list(system.stack), **{k: list(v) for k, v in system.components.items()}}
    found[DEVEL_SCOPE] = system.devel()
    return {scope: in_scope for scope, in_scope in found.items() if in_scope}


def context_items(found: Sequence[LockedDeb], cache: Cache) -> tuple[FileItem, ...]:
    return tuple(FileItem(f"debs/{d.file}", _blob(cache, d.sha256)) for d in found)


def _blob(cache: Cache, sha256: str) -> Callable[[], Path]:
    return lambda: cache.blob(sha256)


def _plain(deb: LockedDeb) -> debs.Deb:
    return debs.Deb(**deb.model_dump())


def _locked(deb: debs.Deb) -> LockedDeb:
    return LockedDeb(**asdict(deb))


def at_hand(
    system: LockedSystem,
    manifest: Manifest,
    arch: Arch,
    base_tarball: Path,
    site: SiteConfig,
    cache: Cache,
    frozen: bool,
    say: Say,
) -> LockedSystem:
    """The system section with every .deb in the cache; gone ones replaced (or refused when frozen)."""
    client = HttpClient()
    everything = {d.sha256: d for d in [*system.stack, *system.devel()]}.values()
    gone = [d for d in everything if debs.fetch(_plain(d), cache, site.deb_dirs, mirrors(d, site), client) is None]
    if not gone:
        return system
    first = gone[0]
    if frozen:
        more = f" (and {len(gone) - 1} more)" if len(gone) > 1 else ""
        raise StackbuildError(
            f"{first.file} ({first.name} {first.version}, locked) is in neither the cache, the site's deb_dirs "
            f"and deb_snapshots, nor {first.repository}{more}: put it in a deb_dirs directory, or relock with "
            f"`stackbuild lock {manifest.name}`"
        )
    fresh = debs.resolve_on(base_tarball, sources(manifest), requested(manifest), arch, site.rewrite, cache)
    gone_names = {d.name for d in gone}
    for deb in gone:
        new = next((d for found in fresh.values() for d in found if d.name == deb.name), None)
        say(f"note: {deb.name} {deb.version} (locked) gone -> {new.version if new else 'not needed any more'}")

    def update(scope: str, locked: Sequence[LockedDeb], installed: set[str]) -> list[LockedDeb]:
        now = {d.name: d for d in fresh.get(scope, []) if d.name not in installed}
        kept = [
            _locked(now[d.name]) if d.name in gone_names else d
            for d in locked
            if d.name not in gone_names or d.name in now
        ]
        names = {d.name for d in locked}
        return kept + [_locked(d) for name, d in now.items() if name not in names]

    stack = update(STACK_SCOPE, system.stack, set())
    in_stack = {d.name for d in stack}
    replaced = LockedSystem(
        stack=stack,
        components={scope: update(scope, found, in_stack) for scope, found in system.components.items()},
        spec_key=system.spec_key,
    )
    download(replaced, site, cache, say)
    return replaced
