"""Resolving each part of a lock on its own: a component's source to a commit or tree hash, an
installer package or a component's fetch file to a sha256 in the cache, a base to a bootstrapped
tarball; the Resolver holds what that needs besides the manifest."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from builder.inputs import bootstrap, debs, package_kinds, packages, signed
from builder.inputs.base_kinds import TarballRecipe, made_by_recipe
from builder.inputs.site import SiteConfig
from builder.inputs.source_kinds import Where, kind_of
from builder.lock.locked import LockedFetch, LockedPackage, LockedSource, LockedTarball
from builder.lock.system import ResolveDebs
from builder.manifest.components import Fetch, Source
from builder.manifest.toolkit import Package, Toolkit
from builder.manifest.types import PackageRole
from builder.model.arch import Arch
from builder.model.say import Say
from builder.store.cache import Cache
from builder.store.http import HttpClient, NoAnswer, redact


@dataclass(frozen=True)
class Resolver:
    """What resolving needs besides the manifest: where it lives, the site, the cache, the network."""

    manifest_dir: Path
    site: SiteConfig
    cache: Cache
    client: HttpClient
    say: Say
    # How a base tarball is made (by its recipe); the tests pass a function that bootstraps nothing.
    make_base: Callable[[TarballRecipe, Arch, bootstrap.Flavor, Where, Say], bootstrap.BaseTarball] = made_by_recipe
    # How system packages are resolved on a base tarball (apt); the tests pass a fixed closure.
    resolve_debs: ResolveDebs = debs.resolve_on

    def source(self, spec: Source) -> LockedSource:
        """A component's source pinned, by its kind."""
        pinned: LockedSource = kind_of(spec).lock(spec, self)
        return pinned

    def package(self, role: PackageRole, package: Package, toolkit: Toolkit) -> LockedPackage:
        """An installer package pinned, by its kind."""
        trust = signed.trust_for(toolkit, self.manifest_dir, self.site)
        pinned: LockedPackage = package_kinds.kind_of(package).lock(role, package, trust, toolkit.vendor, self)
        return pinned

    def fetched(self, wanted: Fetch, previous: LockedFetch | None) -> LockedFetch:
        """A file a component's build needs, in the cache: the previous lock's while it is the same file
        and cached, else from installer_dirs or downloaded (site rewrites apply, as for toolkit
        packages), checked against its pin (the manifest's, else the previous lock's) or pinned now;
        with its size (what bounds a later download of it)."""
        pin = wanted.sha256
        if previous is not None and (previous.url, previous.to) == (wanted.url, wanted.to):
            if pin in (None, previous.sha256) and self.cache.has(previous.sha256):
                # A lock made before sizes were recorded gets its size now.
                return previous.model_copy(update={"size": self.cache.blob(previous.sha256).stat().st_size})
            pin = pin or previous.sha256  # a relock elsewhere never takes other bytes silently
        known = previous.size if previous is not None and previous.sha256 == pin else None
        self.say(f"  fetch {wanted.to}: {redact(wanted.url)}")
        try:
            site, cache, say = self.site, self.cache, self.say
            sha = packages.download(wanted.url, wanted.file, pin, site, cache, say, vendor="", size=known)
        except NoAnswer as err:
            if pin is None:
                raise
            # As for installers the manifest pins: taken as pinned, fetched at build time.
            self.say(f"  fetch {wanted.to}: {err.reason}; keeping its pin {pin[:12]} (fetched when a build needs it)")
            kept = previous if previous is not None and previous.sha256 == pin else None
            return kept or LockedFetch(url=wanted.url, to=wanted.to, sha256=pin)
        return LockedFetch(url=wanted.url, to=wanted.to, sha256=sha, size=self.cache.blob(sha).stat().st_size)

    def tarball(self, recipe: TarballRecipe, arch: Arch, flavor: bootstrap.Flavor) -> LockedTarball:
        self.say(f"  base {arch} {flavor}: {recipe.what} (cached after the first run)")
        made = self.make_base(recipe, arch, flavor, self, self.say)
        key = recipe.key(arch, flavor, self.manifest_dir)
        return LockedTarball(sha256=made.sha256, packages=made.packages, spec_key=key)
