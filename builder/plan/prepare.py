"""The first steps of a build: the lock checked against its manifest, the inputs a build needs
first brought into the cache (prepare_inputs: the only step here with side effects), and every
input located (resolve_inputs: reads only).

Path sources are hashed as they are in the working tree (a difference from the lock is
drift: reported, or refused with --frozen); base tarballs are the lock's, or the ones a
moved Debian mirror gave; packages are fetched only when their stage's context is written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from builder.inputs import base_kinds, bootstrap, package_forms, package_kinds, packages, signed
from builder.inputs.base_kinds import TarballRecipe
from builder.inputs.bootstrap import Flavor
from builder.inputs.contexts import BytesItem, FileItem, GitTree, LocalTree
from builder.inputs.project import Origin, origin_of
from builder.inputs.site import SiteConfig
from builder.inputs.source_kinds import kind_of
from builder.inputs.wheels import Target, Wheel, index_of, requirements_text
from builder.inputs.wheels import fetch as fetch_wheels
from builder.lock.agree import disagreements
from builder.lock.check import manifest_drift, stale_system
from builder.lock.locked import (
    Lock,
    LockedDeb,
    LockedFetch,
    LockedPackage,
    LockedSource,
    LockedSystem,
    LockedTarball,
    LockedWheel,
    Unresolved,
)
from builder.lock.system import every_deb
from builder.manifest.components import Source
from builder.manifest.model import Manifest
from builder.model.arch import Arch
from builder.model.canonical import digest
from builder.model.errors import InputError, StackbuildError, Unreached
from builder.model.names import DEFAULT_PREFIX
from builder.model.say import Say
from builder.plan.debs_at_hand import at_hand, context_digest, context_items, scoped
from builder.plan.plan_model import ContextInput, sha256_text
from builder.store.cache import Cache


@dataclass(frozen=True)
class Request:
    """What one build, plan or render is about: a locked stack, for one architecture."""

    manifest: Manifest
    manifest_path: Path
    lock: Lock
    site: SiteConfig
    cache: Cache
    arch: Arch
    frozen: bool = False
    image_prefix: str = DEFAULT_PREFIX  # the settings': the stage and final images' names start with it

    @property
    def manifest_dir(self) -> Path:
        return self.manifest_path.parent


@dataclass(frozen=True)
class Located:
    """An input of a stage's context: what to put in it, and its content hash."""

    items: tuple[FileItem | LocalTree | GitTree | BytesItem, ...]
    content: ContextInput
    own: ContextInput | None = None  # a source's own content, before its fetch: files were added

    @property
    def source(self) -> ContextInput:
        """The source's own content (a path source's tree hash, a git source's commit)."""
        return self.own or self.content


@dataclass(frozen=True)
class Inputs:
    request: Request
    bases: Mapping[Flavor, Located]
    packages: Located
    sources: Mapping[str, Located]
    drift: tuple[str, ...]
    debs: Mapping[str, Located]  # install point (system.scoped) -> its .debs
    wheels: Mapping[str, Located]  # component -> its Python packages' wheels and requirements file
    compile_cache_tool: tuple[LockedDeb, ...] = ()  # the compile cache's .debs (the tool image unpacks them)
    origin: Origin = field(
        default_factory=Origin
    )  # the checkout holding the manifest (for the build's provenance, never in an image)


def _source(request: Request, spec: Source, locked: LockedSource) -> tuple[Located, str | None]:
    placed = kind_of(locked).place(locked, spec, request)
    return Located(placed.items, ContextInput(placed.what, placed.content)), placed.drift


def _with_fetched(
    request: Request, located: tuple[Located, str | None], component_id: str, say: Say
) -> tuple[Located, str | None]:
    """The component's source with the files its build needs (fetch:) placed at their `to` in it,
    each obtained when the context is written (from the cache, installer_dirs or the URL) and
    checked against the lock."""
    source, drift = located
    fetched = request.lock.component(component_id).fetched
    if not fetched:
        return source, drift
    items = tuple(FileItem(f"src/{f.to}", _obtain_fetched(request, f, say)) for f in fetched)
    pins = [{"to": f.to, "sha256": f.sha256} for f in fetched]
    content = ContextInput(source.content.what, digest({"source": source.content.sha256, "fetched": pins}))
    return Located((*source.items, *items), content, own=source.content), drift


def _obtain_fetched(request: Request, fetched: LockedFetch, say: Say) -> Callable[[], Path]:
    def obtain() -> Path:
        with request.cache.locks.exclusive(f"blob-{fetched.sha256}"):
            file = fetched.to.rsplit("/", 1)[-1]
            site, cache = request.site, request.cache
            packages.download(fetched.url, file, fetched.sha256, site, cache, say, vendor="", size=fetched.size)
            return request.cache.blob(fetched.sha256)

    return obtain


def _obtain_package(request: Request, package: LockedPackage, say: Say) -> Callable[[], Path]:
    """The package's installer (a signed zip's .run, verified), obtained when the context is written."""
    cache = request.cache
    trust = signed.trust_for(request.manifest.toolkit, request.manifest_dir, request.site)

    def obtain() -> Path:
        with cache.locks.exclusive(f"blob-{package.sha256}"):
            return package_forms.installer(fetch(), package.file, trust, cache, packages.FIX_PIN, package.sha256)

    def fetch() -> Path:
        if cache.has(package.sha256):
            return cache.blob(package.sha256)
        sha = package_kinds.kind_of(package).fetch(package, request.manifest.toolkit.vendor, say, request)
        if sha != package.sha256:
            raise StackbuildError(f"{package.file}: sha256 {sha}, the lock pins {package.sha256}: relock")
        return cache.blob(sha)

    return obtain


UNRESOLVED = "unresolved"  # what a rendering names a base by that the lock could not resolve


def _drift_message(flavor: Flavor, made: bootstrap.BaseTarball, locked: LockedTarball, stack: str) -> str:
    changed = sorted(
        p for p in set(made.packages) | set(locked.packages) if made.packages.get(p) != locked.packages.get(p)
    )
    # The same versions in other bytes: the packages did not move, what wrote them did.
    why = (
        f"the Debian mirror moved on: {len(changed)} package versions differ, e.g. {', '.join(changed[:5])}"
        if changed
        else f"the same {len(made.packages)} package versions in other bytes: a site rewrite of the mirror "
        "(mmdebstrap writes the mirror it used into the base's apt sources), another mmdebstrap or apt, "
        "or a lock made by an older stackbuild"
    )
    return (
        f"base-{flavor}: the bootstrap gives sha256 {made.sha256}, the lock pins {locked.sha256} "
        f"({why}); relock with `stackbuild lock {stack}`"
    )


def _base_tarball(request: Request, recipe: TarballRecipe, flavor: Flavor, say: Say | None) -> str:
    """sha256 of the base tarball to build on: the lock's, or what its recipe gives now (made here
    only when say is given: preparing; else what an earlier make recorded)."""
    locked = request.lock.tarball(request.arch, flavor)
    if request.cache.has(locked.sha256):
        return locked.sha256
    made = recipe.recorded(request.arch, flavor, request)
    if made is None and say is not None:
        say(f"[stackbuild] base-{flavor}: {recipe.what} (not in the cache)")
        made = recipe.make(request.arch, flavor, request, say)
    if made is None or made.sha256 == locked.sha256:
        return locked.sha256
    message = _drift_message(flavor, made, locked, request.manifest.name)
    if request.frozen:
        raise StackbuildError(message)
    if say is not None:
        say(f"[stackbuild] warning: {message}; building on the new base (--frozen refuses)")
    return made.sha256


def _cached(cache: Cache, sha256: str) -> Callable[[], Path]:
    """A blob already in the cache (the bases are made before planning)."""
    return lambda: cache.blob(sha256)


def _bases(request: Request, prepared: PreparedInputs | None) -> dict[Flavor, Located]:
    base = request.manifest.base
    kind = base_kinds.kind_of(base)
    if (image := kind.pinned_image(base)) is not None:
        return {flavor: Located((), ContextInput("image", image)) for flavor in bootstrap.FLAVORS}
    recipe = kind.recipe(base)
    assert recipe is not None, f"a {kind.tag} base is neither pulled nor made"
    if prepared is not None:
        shas = dict(prepared.bases)
    elif any(u.kind == "base" for u in request.lock.unresolved_for(request.arch)):
        return {flavor: Located((), ContextInput("base tarball", UNRESOLVED)) for flavor in bootstrap.FLAVORS}
    else:
        shas = bootstrap.each_flavor(lambda flavor: _base_tarball(request, recipe, flavor, None))
    return {
        flavor: Located((FileItem("rootfs.tar", _cached(request.cache, sha)),), ContextInput("base tarball", sha))
        for flavor, sha in shas.items()
    }


@dataclass(frozen=True)
class PreparedInputs:
    """What preparing a request's inputs gave, for resolve_inputs to locate: the base tarballs to build
    on (the lock's, or what bootstrapping gives now), the system section with every .deb at hand (a
    vanished one relocked) and the components' sources (their path trees hashed once)."""

    bases: Mapping[Flavor, str]
    system: LockedSystem
    sources: Mapping[str, Located]  # each component's, as resolve_inputs would locate them (hashed once)
    drifts: tuple[str, ...]  # how path sources differ from the lock


def _agreeing(request: Request, preview: bool = False) -> str | None:
    """The lock is the manifest's and complete for the architecture, or the request is refused. A
    preview (plan, render) of a manifest edited since its lock goes on from the lock as it is: the note
    that says so."""
    lock, manifest = request.lock, request.manifest
    note = None
    problems = disagreements(lock, manifest)
    if (drift := manifest_drift(lock, manifest, str(request.manifest_path))) is not None:
        older = f"the lock of {manifest.name} is older than its manifest ({drift})"
        if not preview or problems:  # a lock that does not fit the edit cannot preview it either
            raise InputError(f"{older}: run `stackbuild lock {manifest.name}`")
        note = f"{older}: planned with the lock as it is"
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InputError(
            f"the lock of {manifest.name} does not match its manifest: {problems[0]}{more}: "
            f"relock with `stackbuild lock {manifest.name}`"
        )
    if lock.section(request.arch).package("toolkit") is None and not manifest.toolkit.preinstalled:
        raise InputError(
            f"the lock of {manifest.name} has no toolkit package for {request.arch}: "
            f"run `stackbuild lock {manifest.name} --arch {request.arch}`"
        )
    return note


def prepare_inputs(request: Request, say: Say) -> PreparedInputs:
    """What a build needs in the cache before it plans: every part of the lock resolved and current,
    missing bases bootstrapped, the .debs and wheels fetched. Everything that can refuse the request
    cheaply is checked before the slow work."""
    _agreeing(request)
    manifest, arch = request.manifest, request.arch
    refuse_unresolved(request.lock, arch)
    section = request.lock.section(arch)
    if (stale := stale_system(manifest, arch, section)) is not None:
        raise StackbuildError(
            f"the lock of {manifest.name} {stale}: run `stackbuild lock {manifest.name} --arch {arch}`"
        )
    trust = signed.trust_for(manifest.toolkit, request.manifest_dir, request.site)
    for package in section.packages:  # a wrong file at hand is refused before git, .debs, wheels and bases
        package_kinds.kind_of(package).at_hand(package, trust, request)
    sources, drifts = _sources(request, say)
    if request.frozen:
        _refuse_drift(drifts)
    system = section.system
    if every_deb(system):
        system = at_hand(system, manifest, arch, section.base, request.site, request.cache, request.frozen, say)
    target, index = Target.of_stack(manifest, arch), index_of(manifest, request.site)
    for pinned in section.python.values():
        fetch_wheels(_as_wheels(pinned), index, request.manifest_dir, target, request.cache, request.site.rewrite)
    bases: Mapping[Flavor, str] = {}
    if (recipe := base_kinds.kind_of(manifest.base).recipe(manifest.base)) is not None:
        bases = bootstrap.each_flavor(lambda flavor: _base_tarball(request, recipe, flavor, say))
    return PreparedInputs(bases, system, sources, tuple(drifts))


def _refuse_drift(drifts: list[str]) -> None:
    if drifts:
        raise StackbuildError("path sources differ from the lock and --frozen is set: relock\n  " + "\n  ".join(drifts))


def _sources(request: Request, say: Say) -> tuple[dict[str, Located], list[str]]:
    """Each component's source (with its fetch: files), and how path sources drifted from the lock."""
    sources, drifts = {}, []
    for cid in request.lock.order:
        spec = request.manifest.component(cid).source
        locked = request.lock.component(cid).source
        sources[cid], drift = _with_fetched(request, _source(request, spec, locked), cid, say)
        if drift:
            drifts.append(f"{cid}: {drift}")
    return sources, drifts


def resolve_inputs(request: Request, *, say: Say, prepared: PreparedInputs | None = None) -> Inputs:
    """Every input of the request located, reading only. With what prepare_inputs gave, for a build;
    without, for a rendering (what the lock leaves unresolved is said and left out)."""
    stale = _agreeing(request, preview=prepared is None)
    lock, manifest, arch = request.lock, request.manifest, request.arch
    section = lock.section(arch)
    if prepared is None and (missing := lock.unresolved_for(arch)):
        parts = "; ".join(_named(u) for u in missing)
        say(f"[stackbuild] note: unresolved in the lock of {lock.stack} for {arch}, left out: {parts}")
    if prepared is None:
        sources, drifts = _sources(request, say)
    else:
        sources, drifts = dict(prepared.sources), list(prepared.drifts)
    if request.frozen:
        _refuse_drift(drifts)
    system = section.system if prepared is None else prepared.system
    if stale is not None:
        drifts.append(stale)
    if prepared is None and (old_system := stale_system(manifest, arch, section)) is not None:
        drifts.append(old_system)
    debs = {
        scope: Located(context_items(found, request.cache), ContextInput("debs", context_digest(found)))
        for scope, found in scoped(system).items()
    }
    wheels = {cid: _wheels(request, pinned) for cid, pinned in section.python.items()}
    package_items = tuple(
        FileItem(f"packages/{package_forms.installer_name(p.file)}", _obtain_package(request, p, say), p.sha256)
        for p in section.packages
    )
    package_shas = sha256_text(",".join(sorted(p.sha256 for p in section.packages)))
    return Inputs(
        request=request,
        bases=_bases(request, prepared),
        packages=Located(package_items, ContextInput("packages", package_shas)),
        sources=sources,
        drift=tuple(drifts),
        debs=debs,
        wheels=wheels,
        compile_cache_tool=tuple(system.compile_cache),
        origin=origin_of(request.manifest_dir),
    )


def _named(part: Unresolved) -> str:
    return f"{part.what()} ({part.url} gave no answer when it was locked)"


def refuse_unresolved(lock: Lock, arch: Arch) -> None:
    """A build needs every part of the lock: what no source answered for is named, with the way on."""
    name, missing = lock.stack, lock.unresolved_for(arch)
    if not missing:
        return
    parts = "; ".join(_named(u) for u in missing)
    raise Unreached(
        f"the lock of {name} leaves {len(missing)} part(s) unresolved for {arch}: {parts}: make them reachable "
        f"(a site's url_rewrites can point them at mirrors) and run `stackbuild lock {name} --arch {arch}`"
    )


def _wheels(request: Request, pinned: list[LockedWheel]) -> Located:
    """A component's wheels and their requirements file (name==version --hash) for its stage's context."""
    found = _as_wheels(pinned)
    text = requirements_text(found)
    items: list[FileItem | BytesItem] = [FileItem(f"wheels/{w.file}", _cached(request.cache, w.sha256)) for w in found]
    items.append(BytesItem("wheels/requirements.txt", text.encode(), 0o644))
    return Located(tuple(items), ContextInput("wheels", sha256_text(text)))


def _as_wheels(pinned: list[LockedWheel]) -> list[Wheel]:
    return [Wheel(w.name, w.version, w.file, w.sha256, w.index) for w in pinned]
