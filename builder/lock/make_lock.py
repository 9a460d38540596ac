"""A stack's lock made and written: resolved against the sources, keeping the pins of the lock it
replaces where they still fit, and what no source answered for named with the site line that fixes it."""

from __future__ import annotations

from pathlib import Path

from builder.lock import io as lock_io
from builder.lock.locked import Lock
from builder.lock.resolve import resolve
from builder.lock.resolver import Resolver
from builder.manifest.model import Manifest
from builder.model.arch import ARCHITECTURES, Arch
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
    return resolved


def how_to_complete(lock: Lock, target: Path, stack: str, site_file: str) -> list[str]:
    """The block `lock` ends with when parts are unresolved: each part with the host it needs, then the
    command that completes the lock where those hosts answer, and the site rewrites that let it here."""
    parts = lock.unresolved
    if not parts:
        return []
    width = max(len(part.what()) for part in parts)
    lines = [f"{target} is incomplete: {len(parts)} part(s) need a host this machine did not reach"]
    lines += [f"  {part.what():<{width}}  needs {part.host()}: {part.reason}" for part in parts]
    arches = [arch for arch in ARCHITECTURES if any(part.arch == arch for part in parts)]
    command = " ".join(["stackbuild", "lock", stack, *(f"--arch {arch}" for arch in arches)])
    sources = list(dict.fromkeys(part.url for part in parts))
    lines += [
        "a build of these parts refuses (exit 3) until a lock resolves them; to complete it, either",
        f"  run `{command}` on a machine that reaches those hosts and commit {target.name}, or",
        f"  point each at a mirror in {site_file} and run it here:",
        "    url_rewrites:",
        *(f'      - {{from: "{url}", to: "<a mirror of it>"}}' for url in sources),
    ]
    return lines


def _previous(target: Path, say: Say) -> Lock | None:
    """The lock being replaced (its other pins are kept); an unreadable one is replaced whole."""
    try:
        return lock_io.read(target)
    except StackbuildError as err:
        say(f"note: not keeping pins of the current lock: {err}")
        return None
