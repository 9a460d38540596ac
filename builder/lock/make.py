"""A stack's lock made and written: resolved against the sources, keeping the pins of the lock it
replaces where they still fit, and what no source answered for named with the site line that fixes it."""

from __future__ import annotations

from pathlib import Path

from builder.inputs.site import SITE_FILE
from builder.lock import io as lock_io
from builder.lock.model import Lock
from builder.lock.resolve import Resolver, resolve
from builder.manifest.model import Manifest
from builder.model.arch import Arch
from builder.model.errors import StackbuildError
from builder.model.say import Say


def make_lock(
    manifest: Manifest, resolver: Resolver, arches: list[Arch], target: Path, update: str | None = None
) -> Lock:
    """The lock of manifest for arches (all it declares when empty) resolved and written to target;
    sealed, as a read of target gives it (its digest labels the images built from it)."""
    previous = _previous(target, resolver.say) if target.exists() else None
    resolver.say(f"locking {manifest.name}")
    resolved = resolve(manifest, resolver, arches, previous=previous, update=update).sealed()
    lock_io.write(resolved, target)
    where = resolver.site.path or f"./{SITE_FILE}"
    for part in resolved.unresolved:
        resolver.say(f"unresolved: {part.line(str(where))}")
    return resolved


def _previous(target: Path, say: Say) -> Lock | None:
    """The lock being replaced (its other pins are kept); an unreadable one is replaced whole."""
    try:
        return lock_io.read(target)
    except StackbuildError as err:
        say(f"note: not keeping pins of the current lock: {err}")
        return None
