"""`stackbuild gc`: remove the stage images no recent build used, by the builds' own records
(builder.execute.history), not by image dates; cached inputs only when asked."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path

from builder.engine import BuildEngine, Engine, EngineError
from builder.execute import compile_mounts
from builder.execute.compile_mounts import TOOLS
from builder.execute.history import BUILDS_LOCK, RUN_KIND, BuildRun, build_runs
from builder.execute.stage_checks import LISTINGS
from builder.execute.stage_normalise import REWRITES
from builder.model.errors import StackbuildError
from builder.model.names import DEFAULT_PREFIX, repository
from builder.plan.plan_model import FAILED, PENDING, STAGES
from builder.store.cache import Cache
from builder.store.files import sha256_file

RECENT = 24 * 3600  # an image another cache's build tagged this recently may still be in use


@dataclass(frozen=True)
class Garbage:
    kept: tuple[BuildRun, ...]
    dropped: tuple[BuildRun, ...]  # older builds: their records go with their images
    images: tuple[tuple[str, int], ...]  # (tag, size in bytes)
    inputs: tuple[tuple[Path, int], ...]  # cached files and git mirrors no kept build names (with --inputs)
    scratch: tuple[tuple[Path, int], ...] = ()  # cache/tmp entries no live process holds: a killed one's
    recent: tuple[str, ...] = ()  # tags no record here names, tagged in the last day: left alone
    image_prefix: str = DEFAULT_PREFIX  # the names looked at: nothing outside them is touched
    # The compile caches under the prefix (the builder's cache mounts): (component, mount id, bytes);
    # removed only when asked (each_compile_cache), otherwise kept and counted.
    compile_caches: tuple[tuple[str, str, int], ...] = ()
    removes_compile_caches: bool = False

    @property
    def image_bytes(self) -> int:
        return sum(size for _, size in self.images)

    @property
    def input_bytes(self) -> int:
        return sum(size for _, size in self.inputs)


def _recent(runs: list[BuildRun], keep: int) -> tuple[list[BuildRun], list[BuildRun]]:
    kept: list[BuildRun] = []
    dropped: list[BuildRun] = []
    for _, group in groupby(runs, key=lambda run: (run.stack, run.arch)):
        ordered = list(group)
        kept += ordered[-keep:]
        dropped += ordered[:-keep]
    return kept, dropped


@contextlib.contextmanager
def no_build_running(cache: Cache) -> Iterator[None]:
    """While gc looks and removes, no build starts or runs with this cache (they wait for it)."""
    with cache.locks.alone(BUILDS_LOCK) as alone:
        if not alone:
            raise StackbuildError("a build is running with this cache: run gc once it is done")
        yield


def find_garbage(
    engine: BuildEngine,
    cache: Cache,
    keep: int,
    inputs: bool,
    include_recent: bool = False,
    now: float | None = None,
    *,
    image_prefix: str,
    each_compile_cache: bool = False,
) -> Garbage:
    """What gc would remove, keeping the last `keep` builds of each stack and architecture. Call it
    within no_build_running: no build uses this cache, so its pending images are a killed build's (its
    scratch entries are those no live process holds). An image tagged in the last day after this
    cache's last build that names it began may be a build's using another cache on this engine: it
    stays unless include_recent."""
    runs = build_runs(cache)
    kept, dropped = _recent(runs, keep)
    used = frozenset().union(*(run.images for run in kept))
    used_keys = frozenset().union(*(run.keys for run in kept))
    images = [tag for tag in sorted(engine.tags(repository(image_prefix, STAGES, "*"))) if tag not in used]
    images += sorted(engine.tags(repository(image_prefix, PENDING, "*")))
    # A failed state of a current stage stays for `shell`.
    images += [
        t for t in sorted(engine.tags(repository(image_prefix, FAILED, "*"))) if t.rpartition(":")[2] not in used_keys
    ]
    since = (time.time() if now is None else now) - RECENT
    recent = () if include_recent else tuple(t for t in images if _maybe_in_use(engine, t, runs, since))
    sized = tuple((tag, _size(engine, tag)) for tag in images if tag not in recent)
    scratch = tuple((p, _tree_size(p) if p.is_dir() else p.lstat().st_size) for p in cache.scratch.abandoned())
    unused = _unused_inputs(cache, kept) if inputs else ()
    mounts = compile_mounts.cache_mounts(engine, image_prefix)
    caches = tuple((component, m.id, m.size) for component, found in sorted(mounts.items()) for m in found)
    if each_compile_cache:  # their tool images go with them (made again by the next build that mounts one)
        sized += tuple((tag, _size(engine, tag)) for tag in sorted(engine.tags(repository(image_prefix, TOOLS, "*"))))
    return Garbage(
        tuple(kept), tuple(dropped), sized, unused, scratch, recent, image_prefix, caches, each_compile_cache
    )


def _maybe_in_use(engine: Engine, tag: str, runs: list[BuildRun], since: float) -> bool:
    """Tagged in the last day, and by no build of this cache that we know began after it: a build
    using another cache on this engine (stage tags are shared by content) may be using it."""
    tagged = _tagged(engine, tag)
    if tagged is None or tagged <= since:
        return False
    key = tag.rpartition(":")[2]
    return not any(run.started > tagged for run in runs if tag in run.images or key in run.keys)


def _tagged(engine: Engine, tag: str) -> float | None:
    with contextlib.suppress(EngineError):
        return engine.inspect(tag).tagged_at
    return None  # removed meanwhile


def lying_blobs(cache: Cache) -> list[Path]:
    """Every cached blob hashed again: those whose content is not their name (a later build fetches
    them anew once they are removed)."""
    return [path for path in cache.blob_files() if sha256_file(path) != path.name]


def _size(engine: Engine, tag: str) -> int:
    with contextlib.suppress(EngineError):
        return engine.inspect(tag).size
    return 0  # removed meanwhile


def _unused_inputs(cache: Cache, kept: Iterable[BuildRun]) -> tuple[tuple[Path, int], ...]:
    runs = list(kept)
    blobs = frozenset().union(*(run.blobs for run in runs))
    mirrors = frozenset().union(*(run.git for run in runs))
    found = [(p, p.stat().st_size) for p in cache.blob_files() if p.name not in blobs]
    found += [(p, _tree_size(p)) for p in cache.git_mirrors() if p.name not in mirrors]
    return tuple(sorted(found))


def stale_records(engine: Engine, cache: Cache, image_prefix: str) -> list[tuple[str, str]]:
    """The records of what was computed once from images the engine no longer holds as stage images
    (kind, name): a layer's rewrite whose result no stage image has (it would be sent again anyway),
    an image's install listing (by its id)."""
    images: set[str] = set()
    layers: set[str] = set()
    for tag in (
        *engine.tags(repository(image_prefix, STAGES, "*")),
        *engine.tags(repository(image_prefix, PENDING, "*")),
    ):
        with contextlib.suppress(EngineError):  # removed meanwhile
            facts = engine.inspect(tag)
            images.add(facts.id)
            layers.update(facts.layers)
    stale = [
        (REWRITES, name) for name, data in cache.records.every(REWRITES).items() if data.get("diff_id") not in layers
    ]
    stale += [
        (LISTINGS, name) for name, data in cache.records.every(LISTINGS).items() if data.get("image") not in images
    ]
    return stale


def _tree_size(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file())


def collect(engine: BuildEngine, cache: Cache, garbage: Garbage) -> int:
    """Remove what find_garbage found; how many bytes of layers and inputs that freed."""
    before = engine.disk_usage()
    for tag, _ in garbage.images:
        with contextlib.suppress(EngineError):  # gone meanwhile, or held by a container: left as it is
            engine.remove(tag)
    freed = max(0, before - engine.disk_usage())
    if garbage.removes_compile_caches:
        for _, mount_id, _ in garbage.compile_caches:
            with contextlib.suppress(EngineError):  # in use by a build meanwhile: left as it is
                freed += engine.remove_cache_mount(mount_id)
    for run in garbage.dropped:
        cache.records.remove(RUN_KIND, run.name)
    for kind, name in stale_records(engine, cache, garbage.image_prefix):
        cache.records.remove(kind, name)
    for path, size in garbage.inputs:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        freed += size
    # Each checked again under its lock: one listed as it was made, before its maker locked it, stays.
    freed += sum(size for path, size in garbage.scratch if cache.scratch.remove(path))
    return freed
