"""The locked .debs of a build, located: each install point's files for its stage's context.

A build makes sure every pinned .deb is at hand before planning (cache, site deb_dirs, the
repository, site snapshots). One served nowhere any more is replaced by what apt resolves
today, with a note (`--frozen` refuses instead), so the stage keys say what is really installed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path

from builder.inputs import debs
from builder.inputs.bootstrap import Flavor
from builder.inputs.contexts import BytesItem, FileItem
from builder.inputs.site import SiteConfig
from builder.lock.locked import LockedDeb, LockedSystem, LockedTarball
from builder.lock.system import download, every_deb, mirrors, pinned, plain, resolve_all
from builder.manifest.model import Manifest
from builder.model.arch import Arch
from builder.model.canonical import digest
from builder.model.errors import StackbuildError
from builder.model.say import Say
from builder.store.cache import Cache
from builder.store.http import HttpClient


def scoped(system: LockedSystem) -> dict[str, list[LockedDeb]]:
    """Stage -> the .debs it installs, in order: the bases', each component's, the devel image's."""
    found = {
        "base-devel": list(system.stack),
        "base-runtime": list(system.runtime),
        **{k: list(v) for k, v in system.components.items()},
        "devel-image": system.devel(),
    }
    return {stage: in_stage for stage, in_stage in found.items() if in_stage}


# Installs an install point's .debs in its stage (templates/debs.j2 runs it): apt's ordering, offline.
INSTALL_SCRIPT = (resources.files("builder.plan") / "templates" / "install-debs.sh").read_text()


def locked_list(found: Sequence[LockedDeb]) -> str:
    """What the install script checks and installs: sha256, file, package, version and architecture, a line each."""
    return "".join(f"{d.sha256} {d.file} {d.name} {d.version} {d.architecture}\n" for d in found)


def context_items(found: Sequence[LockedDeb], cache: Cache) -> tuple[FileItem | BytesItem, ...]:
    """The .debs, the list of what they are, and the script that installs them."""
    return (
        *(FileItem(f"debs/{d.file}", _blob(cache, d.sha256)) for d in found),
        BytesItem("debs/locked.txt", locked_list(found).encode(), 0o644),
        BytesItem("debs/install.sh", INSTALL_SCRIPT.encode()),
    )


def context_digest(found: Sequence[LockedDeb]) -> str:
    return digest({"debs": [d.sha256 for d in found], "locked.txt": locked_list(found), "install.sh": INSTALL_SCRIPT})


def _blob(cache: Cache, sha256: str) -> Callable[[], Path]:
    return lambda: cache.blob(sha256)


def at_hand(
    system: LockedSystem,
    manifest: Manifest,
    arch: Arch,
    bases: dict[Flavor, LockedTarball],
    site: SiteConfig,
    cache: Cache,
    frozen: bool,
    say: Say,
) -> LockedSystem:
    """The system section with every .deb in the cache; gone ones replaced (or refused when frozen)."""
    client = HttpClient(headers=site.headers)
    gone = [
        d for d in every_deb(system) if debs.fetch(plain(d), cache, site.deb_dirs, mirrors(d, site), client) is None
    ]
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
    fresh = pinned(resolve_all(manifest, arch, bases, site, cache, debs.resolve_on), system.spec_key)
    gone_names = {d.name for d in gone}
    now = {d.name: d for d in every_deb(fresh)}
    for deb in gone:
        new = now.get(deb.name)
        say(f"note: {deb.name} {deb.version} (locked) gone -> {new.version if new else 'not needed any more'}")

    def update(locked: Sequence[LockedDeb], today: Sequence[LockedDeb]) -> list[LockedDeb]:
        """The locked closure, its gone .debs replaced by today's and what today's adds to it."""
        by_name = {d.name: d for d in today}
        kept = [
            by_name[d.name] if d.name in gone_names else d
            for d in locked
            if d.name not in gone_names or d.name in by_name
        ]
        names = {d.name for d in locked}
        return kept + [d for d in today if d.name not in names]

    replaced = LockedSystem(
        stack=update(system.stack, fresh.stack),
        runtime=update(system.runtime, fresh.runtime),
        components={
            scope: update(found, fresh.components.get(scope, [])) for scope, found in system.components.items()
        },
        compile_cache=update(system.compile_cache, fresh.compile_cache),
        spec_key=system.spec_key,
    )
    download(replaced, site, cache, say)
    return replaced
