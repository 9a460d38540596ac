"""A built stage image normalised (builder.execute.normalise), so the same inputs give the same image
id: its own layers rewritten from the engine's data root (or through docker save), its parents' left
as they are; a stage built on its parent as built (children start before their parent is normalised)
put over that parent's normalised layers. What each built layer was rewritten to is remembered in the
cache: a rebuild whose builder reused the bottom steps sends only the layers from the first changed
step up (the engine holds the others as rewritten)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import tarfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from builder.engine import BuildEngine, EngineError
from builder.execute.image_load import Normalised, rebased
from builder.execute.normalise import memo_key, normalise, normalise_dirs
from builder.execute.stage_log import StageLog
from builder.plan.plan_model import Plan, Stage
from builder.store.cache import Cache

FOLDED = frozenset({"component", "devel", "runtime"})
REWRITES = "normalised-layers"  # cache records: a built layer's rewrite (normalise.memo_key)
DIFF_ID = re.compile(r"sha256:[0-9a-f]{64}")


class Parent(NamedTuple):
    """A parent's image a stage was built on, and the same parent normalised (the same image when it
    was normalised before the stage's build began)."""

    built_on: str
    settled: str


@dataclass(frozen=True)
class PreparedLayers:
    """A built image's own layers read from the data root, not yet sent: what normalising them leaves
    out or changes is known before its parents are normalised."""

    normal: Normalised | None  # None: not readable there (it goes through docker save)
    parent_layers: frozenset[str]
    own_from: int | None  # where its own layers start: above the parent it is FROM
    from_image: str | None  # the image (of those it was built on) it is FROM; None: a base
    started: float
    image: str  # the image whose layers these are
    # The files normalising leaves out or changes (it dates the others and drops owner names: a build
    # reading only others sees on the image as built what it sees on the normalised one), None when
    # not known (its layers go through docker save); and its own layers' symbolic links.
    changed: list[str] | None
    links: list[str]

    def under(self, engine: BuildEngine, image: str) -> PreparedLayers:
        """The same layers read, under image's config (the image as built with its environment added:
        no layer of its own); as docker save reads it when its config cannot be read here."""
        if self.normal is None or image == self.image:
            return self
        try:
            found = engine.layer_dirs(image)
            config = json.loads(found.config) if found else None
        except (EngineError, OSError, ValueError):
            config = None
        if config is None or config["rootfs"]["diff_ids"] != self.normal.source["rootfs"]["diff_ids"]:
            return dataclasses.replace(self, normal=None)
        return dataclasses.replace(self, normal=dataclasses.replace(self.normal, source=config))


def _from_parent(engine: BuildEngine, layers: list[str], parents: list[Parent]) -> tuple[Parent, list[str]] | None:
    """The parent built FROM (the others it copies from): the longest whose layers are its bottom ones."""
    found: tuple[Parent, list[str]] | None = None
    for parent in parents:
        below = list(engine.inspect(parent.built_on).layers)
        if below and layers[: len(below)] == below and (found is None or len(below) > len(found[1])):
            found = (parent, below)
    return found


def folds(stage: Stage) -> bool:
    """Whether stage's own small layers are folded into one: by its kind, so one key gives one image
    in every stack. No stage is built FROM a component or a final image (their children copy files
    out of them); the bases and the toolkit keep their layers, which their children are built on."""
    return stage.kind in FOLDED


def prepare(
    engine: BuildEngine,
    plan: Plan,
    stage: Stage,
    built: str,
    built_on: list[str],
    log: StageLog,
    keep_failed: bool = False,
) -> PreparedLayers:
    """built's own layers read from the data root (as built on the images built_on), not yet sent;
    built is removed when they cannot be read, unless keep_failed (another job still reads it)."""
    started = time.monotonic()
    try:
        parent_layers = frozenset(d for image in built_on for d in engine.inspect(image).layers)
        if stage.kind == "base" and plan.base_image:  # the pinned image's layers stay as pulled
            parent_layers |= _pinned_layers(engine, plan, plan.base_image)
        # Its own layers are those above the parent it is FROM (one it copies from may have a layer
        # with the same bytes as one of them: that is its own all the same).
        found = _from_parent(engine, list(engine.inspect(built).layers), [Parent(ref, ref) for ref in built_on])
        own_from = len(found[1]) if found else None
        on_disk = engine.layer_dirs(built)
        epoch, fold = plan.source_date_epoch, folds(stage)
        normal = normalise_dirs(on_disk, parent_layers, epoch, own_from, fold) if on_disk else None
    except (EngineError, OSError, tarfile.TarError, ValueError, KeyError, IndexError) as err:
        if not keep_failed:
            with contextlib.suppress(EngineError):  # the build's own image: nothing else names it yet
                engine.remove(built)
        raise log.failed(f"cannot normalise its image: {err}") from err
    changed, links = (normal.changed, normal.links) if normal is not None else (None, [])
    from_image = found[0].built_on if found else None
    return PreparedLayers(normal, parent_layers, own_from, from_image, started, built, changed, links)


def normalised(
    engine: BuildEngine,
    cache: Cache,
    plan: Plan,
    stage: Stage,
    built: str,
    parents: list[Parent],
    log: StageLog,
    keep_built: bool = False,
    prepared: PreparedLayers | None = None,
    remembered: bool = True,
) -> str:
    """The image id of built, normalised (loaded into the engine when it differs; built removed then,
    unless keep_built: children are built on it); prepared: its layers read already; remembered: a
    layer rewritten before may be taken as the engine holds it (verify-reproducible rewrites all)."""
    prepared = prepared or prepare(engine, plan, stage, built, [p.built_on for p in parents], log)
    epoch, parent_layers, own_from = plan.source_date_epoch, prepared.parent_layers, prepared.own_from
    try:
        normal, how, over = prepared.normal, "from the data root", False
        if normal is not None:
            normal, over = _over_settled(engine, parents, normal)
            normal, how = _sent_from_data_root(engine, cache, normal, built, keep_built, log, remembered)
        if normal is None:
            how = "through docker save"
            with cache.scratch.temp_dir() as scratch, engine.save(built) as saved:
                rewritten = normalise(saved, parent_layers, epoch, scratch, own_from, folds(stage))
                normal, over = _over_settled(engine, parents, rewritten)
                if keep_built and prepared.changed is not None and normal.changed != prepared.changed:
                    # Its children were built on it by what the data root said normalising changes.
                    raise ValueError("docker save gives other files to leave out or change than its data root")
                _load_if_changed(engine, normal, built, normal.archive(), keep_built)
    except (EngineError, OSError, tarfile.TarError, ValueError, KeyError, IndexError) as err:
        if not keep_built:
            with contextlib.suppress(EngineError):  # the build's own image: nothing else names it
                engine.remove(built)
        raise log.failed(f"cannot normalise its image: {err}") from err
    _remember(cache, normal)
    if over:
        how += ", over its parent as normalised"
    if normal.changed:
        shown = ", ".join(normal.changed[:3]) + (", ..." if len(normal.changed) > 3 else "")
        how += f", {len(normal.changed)} file(s) left out or changed ({shown})"
    took = time.monotonic() - prepared.started
    log.write(f"# normalised to {normal.image_id} in {took:.2f}s {how} (was {built})")
    return normal.image_id


def _sent_from_data_root(
    engine: BuildEngine,
    cache: Cache,
    normal: Normalised,
    built: str,
    keep_built: bool,
    log: StageLog,
    remembered: bool = True,
) -> tuple[Normalised | None, str]:
    """normal loaded as its layers are read from the data root, but those the engine holds as rewritten
    before (when remembered); None when the data root could not be read as they were sent. How, in words."""
    every, normal = normal, _known(engine, cache, normal) if remembered else normal
    how = "from the data root"
    if held := len(every.sent) - len(normal.sent):
        canonical = sum(layer.canonical for layer in every.sent if layer not in normal.sent)
        why = f"({canonical} canonical as built)" if canonical else "as rewritten before"
        how += f", {held} of {len(every.sent)} own layer(s) held {why}"
    try:
        unread = _loaded_from_data_root(engine, normal, built, keep_built)
    except EngineError as err:
        if not held:
            raise
        # A layer held when asked went before the load (another image removed): all are sent.
        log.write(f"# the engine refused the image without the layers it held ({err}): every layer sent")
        normal, how = every, "from the data root"
        unread = _loaded_from_data_root(engine, normal, built, keep_built)
    if unread is not None:
        log.write(f"# the data root could not be read as the layers were sent ({unread}): through docker save")
        return None, how
    return normal, how


def _known(engine: BuildEngine, cache: Cache, normal: Normalised) -> Normalised:
    """normal without the bottom run of its own layers whose rewrite is known (canonical as built, or
    rewritten before: the same built bytes give the same rewrite) and that the engine holds as
    rewritten on the same layers below: they are neither read nor sent."""
    diff_ids, found = list(normal.diff_ids), {}
    for layer in sorted(normal.sent, key=lambda sent: sent.index):
        # A canonical layer's rewrite is the built layer itself; another's, what it was rewritten to before.
        record = {} if layer.canonical else cache.records.read(REWRITES, memo_key(layer.built, normal.epoch)) or {}
        rewritten = layer.built[0] if layer.canonical else record.get("diff_id")
        if not isinstance(rewritten, str) or not DIFF_ID.fullmatch(rewritten):
            break
        diff_ids[layer.index] = found[layer.index] = rewritten
    if not found:
        return normal
    held = engine.held(diff_ids[: max(found) + 1])
    return normal.known({index: diff_id for index, diff_id in found.items() if index < held})


def _remember(cache: Cache, normal: Normalised) -> None:
    """What each layer sent was rewritten to, for the next build that reuses it (a full disk forgets it)."""
    for layer in normal.sent:
        with contextlib.suppress(OSError):
            cache.records.write(
                {"diff_id": normal.diff_ids[layer.index]}, REWRITES, memo_key(layer.built, normal.epoch)
            )


def _over_settled(engine: BuildEngine, parents: list[Parent], normal: Normalised) -> tuple[Normalised, bool]:
    """normal put over its FROM parent as normalised, when it was built on that parent as built; and
    whether it was."""
    found = _from_parent(engine, normal.source["rootfs"]["diff_ids"], parents)
    if found is None or found[0].built_on == found[0].settled:
        return normal, False
    settled = list(engine.inspect(found[0].settled).layers)
    return (rebased(normal, len(found[1]), settled), True) if settled != found[1] else (normal, False)


def _loaded_from_data_root(
    engine: BuildEngine, normal: Normalised, built: str, keep_built: bool
) -> OSError | ValueError | None:
    """Load normal as its layers are read from the data root; the read error when a file there went
    or could not be read while it was sent (the engine still has the image: docker save reads it)."""
    unread: list[OSError | ValueError] = []

    def reading() -> Iterator[bytes]:
        try:
            yield from normal.archive()
        except (OSError, ValueError) as err:  # ValueError: a file changed size while it was read
            unread.append(err)
            raise

    try:
        _load_if_changed(engine, normal, built, reading(), keep_built)
    except (EngineError, OSError, ValueError):
        if unread:  # the engine's client reports a body that failed as its own error
            return unread[0]
        raise
    return None


def _load_if_changed(
    engine: BuildEngine, normal: Normalised, built: str, archive: Iterable[bytes], keep_built: bool
) -> None:
    """The normalised image into the engine unless it is the built one; the built one removed then
    (unless kept: children are built on it)."""
    if not normal.settled or normal.image_id != built:
        engine.load(archive)
        if not keep_built:
            with contextlib.suppress(EngineError):  # the build's own image: nothing names it
                engine.remove(built)


def _pinned_layers(engine: BuildEngine, plan: Plan, image: str) -> frozenset[str]:
    """The pinned base image's layers, pulled when the engine lacks it (BuildKit keeps what it pulls to itself)."""
    if engine.image_id(image) is None and engine.pull(image, plan.arch) is None:
        raise EngineError(f"the base image {image} is not in its registry")
    return frozenset(engine.inspect(image).layers)
