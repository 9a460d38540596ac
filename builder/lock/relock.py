"""What a relock keeps of the previous lock, and the parts it records unresolved: a git pin kept
while its manifest entry is unchanged and its source serves it, a pin kept when its source gives no
answer, and an architecture not locked now keeping its unresolved parts while the manifest still
asks for them from the same source."""

from __future__ import annotations

from builder.inputs import base_kinds, wheels
from builder.inputs.site import SiteConfig
from builder.inputs.source_kinds import kind_of
from builder.lock.locked import ArchSection, Lock, LockedSource, Unresolved, UnresolvedKind
from builder.lock.resolver import Resolver
from builder.lock.system import wants_system
from builder.manifest.components import Source
from builder.manifest.model import Manifest
from builder.model.arch import Arch
from builder.model.errors import SourceError, SourceUnreachable
from builder.store.http import NoAnswer, redact

# `lock --update` without a component: every git pin moves to what its ref names now.
UPDATE_ALL = ":all"


def same_entry(old: LockedSource, spec: Source) -> bool:
    """Whether a pin was made from this manifest entry (the same kind, the same fields)."""
    kind = kind_of(old)
    return kind is kind_of(spec) and kind.entry(old) == kind.entry(spec)


def kept_source(
    previous: Lock | None, update: str | None, comp_id: str, spec: Source, resolver: Resolver
) -> LockedSource | None:
    """The previous lock's pin of a component whose manifest entry is unchanged while its source still
    serves it (a branch that moved upstream keeps its pin: only --update moves it); a source that does
    not answer keeps it too (said). None: pin it now (--update of it or of all, a changed entry, a
    commit no longer served, a kind whose pins do not move upstream)."""
    if previous is None or update in (UPDATE_ALL, comp_id):
        return None
    old = next((c.source for c in previous.components if c.id == comp_id), None)
    if old is None or not same_entry(old, spec):
        return None
    kind = kind_of(old)
    try:
        upstream = kind.upstream(old, resolver)
    except SourceUnreachable as err:
        resolver.say(f"  component {comp_id}: {err}: keeping the lock's {kind.describe(old).version[:12]}")
        return old
    except SourceError:
        return None  # the ref is gone: pinning it says so
    if upstream is None:
        return None
    if not upstream.served:
        resolver.say(
            f"  component {comp_id}: {upstream.source} no longer serves the locked {upstream.pinned[:12]}: relocking"
        )
        return None
    if upstream.now != upstream.pinned:
        resolver.say(
            f"  component {comp_id}: {upstream.ref} moved to {upstream.now[:12]} upstream; keeping the lock's "
            f"{upstream.pinned[:12]} (`stackbuild lock {previous.stack} --update {comp_id}` moves it)"
        )
    return old


def unresolved_part(kind: UnresolvedKind, arch: Arch | None, err: NoAnswer, **where: str) -> Unresolved:
    return Unresolved(kind=kind, arch=arch, url=err.source, reason=err.reason, **where)


def kept_or_unresolved(
    kept: bool, kind: UnresolvedKind, arch: Arch | None, err: NoAnswer, resolver: Resolver, component: str = ""
) -> list[Unresolved]:
    """A part whose source gave no answer keeps the previous lock's pin while that still fits the
    manifest (said); with none, it is recorded unresolved."""
    if kept:
        resolver.say(f"  {err.reason}: keeping the lock's pins")
        return []
    return [unresolved_part(kind, arch, err, component=component)]


def _asked_from(manifest: Manifest, arch: Arch, part: Unresolved, site: SiteConfig) -> set[str]:
    """The sources the manifest still takes that part from (none: it no longer asks for it)."""
    match part.kind:
        case "base" if (recipe := base_kinds.kind_of(manifest.base).recipe(manifest.base)) is not None:
            return {redact(recipe.source(arch))}
        case "system" if wants_system(manifest):
            return {redact(r.url_for(arch)) for r in manifest.apt_repositories}
        case "python" if any(c.id == part.component and c.python_packages for c in manifest.components):
            index = wheels.index_of(manifest, site)
            return {redact(i) for i in ([index] if isinstance(index, str) else index)}
    return set()


def still_unresolved(
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
