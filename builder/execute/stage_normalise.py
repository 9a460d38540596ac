"""A built stage image normalised (builder.execute.normalise), so the same inputs give the same image
id: its own layers rewritten from the engine's data root (or through docker save), its parents' left
as they are."""

from __future__ import annotations

import contextlib
import tarfile
import time

from builder.engine import BuildEngine, EngineError
from builder.execute.normalise import normalise, normalise_dirs
from builder.execute.stage_log import StageLog
from builder.plan.stage import Plan, Stage
from builder.store.cache import Cache


def normalised(
    engine: BuildEngine, cache: Cache, plan: Plan, stage: Stage, built: str, parents: list[str], log: StageLog
) -> str:
    """The image id of built, normalised (loaded into the engine when it differs; built removed then)."""
    started = time.monotonic()
    try:
        parent_layers = frozenset(d for image in parents for d in engine.inspect(image).layers)
        if stage.kind == "base" and plan.base_image:  # the pinned image's layers stay as pulled
            parent_layers |= _pinned_layers(engine, plan, plan.base_image)
        on_disk = engine.layer_dirs(built)
        normal = normalise_dirs(on_disk, parent_layers, plan.source_date_epoch) if on_disk else None
        how = "from the data root"
        with cache.temp_dir() as scratch:
            if normal is None:
                how = "through docker save"
                with engine.save(built) as saved:
                    normal = normalise(saved, parent_layers, plan.source_date_epoch, scratch)
            if not normal.settled or normal.image_id != built:
                engine.load(normal.archive())
                with contextlib.suppress(EngineError):  # the build's own image: nothing names it
                    engine.remove(built)
    except (EngineError, OSError, tarfile.TarError, ValueError, KeyError, IndexError) as err:
        with contextlib.suppress(EngineError):  # the build's own image: nothing else names it
            engine.remove(built)
        raise log.failed(f"cannot normalise its image: {err}") from err
    log.write(f"# normalised to {normal.image_id} in {time.monotonic() - started:.2f}s {how} (was {built})")
    return normal.image_id


def _pinned_layers(engine: BuildEngine, plan: Plan, image: str) -> frozenset[str]:
    """The pinned base image's layers, pulled when the engine lacks it (BuildKit keeps what it pulls to itself)."""
    if engine.image_id(image) is None and engine.pull(image, plan.arch) is None:
        raise EngineError(f"the base image {image} is not in its registry")
    return frozenset(engine.inspect(image).layers)
