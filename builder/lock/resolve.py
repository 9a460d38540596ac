"""Resolving a manifest into a lock: git refs to commits, trees to hashes, packages to sha256,
bases to bootstrapped tarballs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from pydantic import ValidationError

from builder.inputs import bootstrap, debs, git, packages, signed, submodules, trees, wheels
from builder.inputs.signed import Trust
from builder.inputs.site import SITE_FILE, SiteConfig
from builder.lock.agree import package_differences
from builder.lock.model import (
    LOCK_VERSION,
    ArchSection,
    Lock,
    LockedBootstrapBase,
    LockedComponent,
    LockedDownload,
    LockedFetch,
    LockedGenerated,
    LockedGit,
    LockedImageBase,
    LockedPath,
    LockedSubmodule,
    LockedSystem,
    LockedTarball,
    LockedToolkit,
    LockedWheel,
    Unresolved,
    UnresolvedKind,
)
from builder.lock.system import ResolveDebs, lock_system, wants_system
from builder.manifest import catalog
from builder.manifest.graph import topological_order
from builder.manifest.load import manifest_digest
from builder.manifest.model import (
    PACKAGE_ROLES,
    BootstrapBase,
    Component,
    DownloadPackage,
    Fetch,
    GeneratedPackage,
    GitSource,
    ImageBase,
    Manifest,
    PackageRole,
    PathSource,
    Toolkit,
)
from builder.model.arch import Arch
from builder.model.canonical import digest
from builder.model.errors import StackbuildError, Unreached
from builder.model.say import Say
from builder.store.cache import Cache
from builder.store.http import HttpClient, NoAnswer, Progress, SizeLimit, redact


@dataclass(frozen=True)
class Resolver:
    """What resolving needs besides the manifest: where it lives, the site, the cache, the network."""

    manifest_dir: Path
    site: SiteConfig
    cache: Cache
    client: HttpClient
    say: Say
    # How a base tarball is made (mmdebstrap); the tests pass a function that bootstraps nothing.
    make_base: Callable[..., bootstrap.BaseTarball] = bootstrap.bootstrap
    # How system packages are resolved on a base tarball (apt); the tests pass a fixed closure.
    resolve_debs: ResolveDebs = debs.resolve_on

    def source(self, source: GitSource | PathSource) -> LockedGit | LockedPath:
        match source:
            case GitSource(git=url, ref=ref, skip_submodules=skip):
                fetch_url = self.site.repo_url(url)
                commit = git.resolve_ref(fetch_url, ref)
                found = submodules.resolve(url, fetch_url, commit, self.cache, self.site, skip)
                try:
                    return LockedGit(
                        url=url, ref=ref, commit=commit, submodules=[_locked(s) for s in found], skip_submodules=skip
                    )
                except ValidationError as err:  # a .gitmodules entry: said without echoing it (it may hold a token)
                    problem = err.errors()[0]
                    where = ".".join(str(p) for p in problem["loc"])
                    message = problem["msg"].removeprefix("Value error, ")
                    raise git.SourceError(f"{redact(url)} at {commit}: submodule {where}: {message}") from None
            case PathSource(path=path):
                return LockedPath(path=path, tree_sha256=trees.tree_hash(self.manifest_dir / path))

    def upstream(self, locked: LockedGit) -> tuple[str, bool]:
        """(the commit the locked ref names at its source now, whether the locked commit is still served
        there): a branch that moved keeps its old commit fetchable unless it was force-pushed away."""
        fetch_url = self.site.repo_url(locked.url)
        now = git.resolve_ref(fetch_url, locked.ref)
        return now, now == locked.commit or git.fetchable(fetch_url, locked.commit, self.cache)

    def package(
        self, role: PackageRole, package: DownloadPackage | GeneratedPackage, toolkit: Toolkit
    ) -> LockedDownload | LockedGenerated:
        trust = signed.trust_for(toolkit, self.manifest_dir, self.site)
        match package:
            case GeneratedPackage(file=file, generate=command):
                sha = packages.generate(command, file, self.manifest_dir, self.cache, package.sha256)
                packages.installer(self.cache.blob(sha), file, trust, self.cache, "fix its generate command", sha)
                size = self.cache.blob(sha).stat().st_size
                return LockedGenerated(role=role, file=file, command=command, sha256=sha, size=size)
            case DownloadPackage(file=file, url=url, sha256=pinned):
                sha, known_size = self._download(file, url, pinned, toolkit.vendor, trust)
                return LockedDownload(role=role, file=file, url=url, sha256=sha, size=known_size)

    def _download(self, file: str, url: str, pinned: str | None, vendor: str, trust: Trust) -> tuple[str, int | None]:
        """(sha256, size) of a package: a local copy; the manifest's pin as it is (no network: an air-gapped
        site fetches at build time); else the whole file downloaded and hashed (never a HEAD's word), with
        the headers the vendor's own downloader sends."""
        if (local := packages.find_installer(self.site, file, pinned)) is not None:
            packages.installer(local, file, trust, self.cache, packages.FIX_PIN if pinned else packages.REPLACE)
            sha = self.cache.add_file(local, pinned)
            self.say(f"  {file}: found in {local.parent} (installer_dirs)")
            return sha, local.stat().st_size
        if pinned and self.cache.has(pinned):
            packages.installer(self.cache.blob(pinned), file, trust, self.cache, packages.FIX_PIN, pinned)
            self.say(f"  {file}: in the cache")
            return pinned, self.cache.blob(pinned).stat().st_size
        if pinned:
            self.say(
                f"  {file}: in no installer_dirs directory: downloaded when a build needs it, checked against its pin"
            )
            return pinned, None
        self.say(f"  {file}: no sha256 in the manifest, downloading to pin it")
        try:
            sha = self.client.download(
                self.site.rewrite(url),
                self.cache,
                progress=Progress(f"  {file}", self.say),
                headers=catalog.vendor_headers(vendor),
                limit=SizeLimit(self.site.download_limit),
            )
        except NoAnswer as err:  # nothing to pin it with: the file itself is the only source of its sha256
            where = self.site.path or f"./{SITE_FILE}"
            raise Unreached(
                f"{file}: {err.reason}: without a sha256 in the manifest the lock needs the file: lock where "
                f"that host answers, put the file in an installer_dirs directory, or point the URL at a mirror "
                f"with url_rewrites (both in {where})"
            ) from err
        packages.installer(
            self.cache.blob(sha), file, trust, self.cache, f"{redact(url)} gives another file: fix the url", sha
        )
        return sha, self.cache.blob(sha).stat().st_size

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

    def tarball(self, spec: BootstrapBase, arch: Arch, flavor: bootstrap.Flavor) -> LockedTarball:
        boot = spec.bootstrap
        self.say(f"  base {arch} {flavor}: mmdebstrap {boot.suite} (cached after the first run)")
        keys = bootstrap.keyring(boot, self.manifest_dir)
        mirror = self.site.rewrite(boot.mirror_for(arch))
        made = self.make_base(boot, arch, flavor, keys, self.cache, mirror, self.say)
        key = bootstrap.spec_key(boot, arch, flavor, keys)
        return LockedTarball(sha256=made.sha256, packages=made.packages, spec_key=key)


def _locked(found: submodules.Submodule) -> LockedSubmodule:
    return LockedSubmodule(
        path=found.path, url=found.url, commit=found.commit, submodules=[_locked(s) for s in found.submodules]
    )


def default_arches(manifest: Manifest) -> list[Arch]:
    """This host's architecture if the stack has it, else the stack's first."""
    listed = manifest.platform.architectures
    return [a for a in listed if a == Arch.host()] or [listed[0]]


# `lock --update` without a component: every git pin moves to what its ref names now.
UPDATE_ALL = ":all"


def same_entry(old: LockedGit, source: object) -> bool:
    """Whether a git pin was made from this manifest entry (url, ref, skipped submodules)."""
    if not isinstance(source, GitSource):
        return False
    return (old.url, old.ref, old.skip_submodules) == (source.git, source.ref, source.skip_submodules)


def _kept_source(
    previous: Lock | None, update: str | None, comp_id: str, source: object, resolver: Resolver
) -> LockedGit | None:
    """The previous lock's commit of a git component whose manifest entry is unchanged while its source
    still serves it (a branch that moved upstream keeps its pin: only --update moves it); a source that
    does not answer keeps it too (said). None: resolve it now (--update of it or of all, a changed entry,
    a commit no longer served)."""
    if previous is None or update in (UPDATE_ALL, comp_id):
        return None
    old = next((c.source for c in previous.components if c.id == comp_id), None)
    if not isinstance(old, LockedGit) or not same_entry(old, source):
        return None
    try:
        now, served = resolver.upstream(old)
    except git.SourceUnreachable as err:
        resolver.say(f"  component {comp_id}: {err}: keeping the lock's {old.commit[:12]}")
        return old
    except git.SourceError:
        return None  # the ref is gone: resolving it says so
    if not served:
        resolver.say(
            f"  component {comp_id}: {redact(old.url)} no longer serves the locked {old.commit[:12]}: relocking"
        )
        return None
    if now != old.commit:
        resolver.say(
            f"  component {comp_id}: {old.ref} moved to {now[:12]} upstream; keeping the lock's {old.commit[:12]} "
            f"(`stackbuild lock {previous.stack} --update {comp_id}` moves it)"
        )
    return old


def _unresolved(kind: UnresolvedKind, arch: Arch | None, err: NoAnswer, **where: str) -> Unresolved:
    return Unresolved(kind=kind, arch=arch, url=err.source, reason=err.reason, **where)


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
        unresolved += _kept_or_unresolved(bool(bases), "base", arch, err, resolver)
    try:
        system = _system(manifest, arch, bases, previous, wanted, resolver)
    except NoAnswer as err:
        system = _system(manifest, arch, bases, previous, False, resolver)
        unresolved += _kept_or_unresolved(bool(system.spec_key), "system", arch, err, resolver)
    python, python_keys, no_index = _python(manifest, arch, wanted, previous, update, resolver)
    section = ArchSection(packages=pinned, base=bases, system=system, python=python, python_keys=python_keys)
    return section, unresolved + no_index


def _packages(
    manifest: Manifest, arch: Arch, wanted: bool, previous: Lock | None, resolver: Resolver
) -> list[LockedDownload | LockedGenerated]:
    pinned: list[LockedDownload | LockedGenerated] = []
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


def _kept_or_unresolved(
    kept: bool, kind: UnresolvedKind, arch: Arch | None, err: NoAnswer, resolver: Resolver, component: str = ""
) -> list[Unresolved]:
    """A part whose source gave no answer keeps the previous lock's pin while that still fits the
    manifest (said); with none, it is recorded unresolved."""
    if kept:
        resolver.say(f"  {err.reason}: keeping the lock's pins")
        return []
    return [_unresolved(kind, arch, err, component=component)]


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
            unresolved += _kept_or_unresolved(still, "python", arch, err, resolver, comp.id)
            continue
        found[comp.id], keys[comp.id] = [LockedWheel(**asdict(w)) for w in pinned], key
    return found, keys, unresolved


def _bases(
    manifest: Manifest, arch: Arch, wanted: bool, previous: Lock | None, resolver: Resolver
) -> dict[bootstrap.Flavor, LockedTarball]:
    """The arch's base tarballs: bootstrapped if asked for, else the previous lock's while their spec matches."""
    base = manifest.base
    if not isinstance(base, BootstrapBase):
        return {}
    if wanted:
        return bootstrap.each_flavor(lambda flavor: resolver.tarball(base, arch, flavor))
    keys = bootstrap.keyring(base.bootstrap, resolver.manifest_dir)
    old = previous.architectures.get(arch) if previous else None
    kept = {
        flavor: tarball
        for flavor, tarball in (old.base.items() if old else [])
        if tarball.spec_key == bootstrap.spec_key(base.bootstrap, arch, flavor, keys)
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
            unresolved.append(_unresolved("fetch", None, err, component=comp.id, path=wanted.to))
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
            source = _kept_source(previous, update, comp.id, comp.source, resolver) or resolver.source(comp.source)
        except git.SourceNoAnswer as err:  # no pin to keep: nothing to lock it with
            raise Unreached(
                f"component {comp.id}: {err}: lock where that host answers, or point the URL at a mirror with "
                f"url_rewrites in {resolver.site.path or f'./{SITE_FILE}'} (docs/manifest.md, local mirrors)"
            ) from err
        except git.SourceError as err:
            raise git.SourceError(f"component {comp.id}: {err}") from err
        resolver.say(f"  component {comp.id}: {source.describe()}")
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
            unresolved += _still_unresolved(manifest, previous, arch, sections[arch], resolver.site)
    match manifest.base:
        case BootstrapBase(bootstrap=boot):
            base: LockedImageBase | LockedBootstrapBase = LockedBootstrapBase(
                suite=boot.suite,
                mirror=boot.mirror,
                variant=boot.variant,
                source_date_epoch=bootstrap.SOURCE_DATE_EPOCH,
            )
        case ImageBase(image=image):
            base = LockedImageBase(image=image, source_date_epoch=bootstrap.SOURCE_DATE_EPOCH)
    return Lock(
        lock_version=LOCK_VERSION,
        stack=manifest.name,
        manifest_sha256=manifest_digest(manifest),
        toolkit=LockedToolkit(
            vendor=manifest.toolkit.vendor, version=manifest.toolkit.version, chip=manifest.toolkit.chip
        ),
        base=base,
        components=components,
        order=topological_order({c.id: c.depends_on for c in manifest.components}),
        architectures=sections,
        unresolved=unresolved,
    )


def _asked_from(manifest: Manifest, arch: Arch, part: Unresolved, site: SiteConfig) -> set[str]:
    """The sources the manifest still takes that part from (none: it no longer asks for it)."""
    match part.kind:
        case "base" if isinstance(manifest.base, BootstrapBase):
            return {redact(manifest.base.bootstrap.mirror_for(arch))}
        case "system" if wants_system(manifest):
            return {redact(r.url_for(arch)) for r in manifest.apt_repositories}
        case "python" if any(c.id == part.component and c.python_packages for c in manifest.components):
            index = wheels.index_of(manifest, site)
            return {redact(i) for i in ([index] if isinstance(index, str) else index)}
    return set()


def _still_unresolved(
    manifest: Manifest, previous: Lock | None, arch: Arch, kept: ArchSection, site: SiteConfig
) -> list[Unresolved]:
    """An architecture not locked now keeps its unresolved parts while the manifest still takes them
    from the same source and its kept section still lacks them."""
    lacking = {"base": not kept.base, "system": not kept.system.spec_key}
    return [
        part
        for part in (previous.unresolved if previous else [])
        if part.arch == arch
        and part.url in _asked_from(manifest, arch, part, site)
        and lacking.get(part.kind, part.component not in kept.python)
    ]
