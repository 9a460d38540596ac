"""A stage image's checks: its probes (before it is tagged, built or pulled) and, before the images
that merge every component, that no file is installed by two components."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

from builder.engine import Engine, EngineError
from builder.execute.debug import record_failure
from builder.execute.stage_log import StageLog
from builder.model.arch import Arch
from builder.model.canonical import code_digest, digest
from builder.plan.plan_model import Plan, Stage
from builder.store.cache import Cache
from builder.verify import installs
from builder.verify.diagnose import diagnose
from builder.verify.installs import added_files, collisions, installed_files
from builder.verify.probes import run_probes

# What made a remembered listing: the code that lists (a change to it lists every image again).
LISTER = code_digest(installs)
LISTINGS = "install-listings"  # cache records: an image's installed files, by its id (gc drops them with it)


def drop(engine: Engine, stage: Stage, image_id: str) -> None:
    """An image that failed: removed, or (while children built from it still hold it) at least untagged."""
    try:
        engine.remove(image_id)
    except EngineError:
        with contextlib.suppress(EngineError):
            engine.remove(stage.pending_tag())


def shell_hint(plan: Plan, stage: Stage) -> str:
    """The command that opens a shell where the stage failed."""
    arch = "" if plan.arch == Arch.host() else f" --arch {plan.arch}"
    return f"stackbuild shell{arch} {plan.stack} {stage.name}"


def probe(engine: Engine, cache: Cache, plan: Plan, stage: Stage, image_id: str, log: StageLog) -> None:
    """stage's probes on image_id, each result in the log; a failing image is dropped and the failure
    recorded for `stackbuild shell`."""
    try:
        results = run_probes(engine, image_id, stage.probe_workdir, stage.probes)
    except EngineError as err:
        drop(engine, stage, image_id)
        raise log.failed(f"cannot run its probes: {err}") from err
    for result in results:
        log.write(f"# probe {result.name}: {'ok' if result.ok else 'FAILED'}: {result.message}")
    failed = [r for r in results if not r.ok]
    if failed:
        drop(engine, stage, image_id)
        first = failed[0]
        reason = f"probe {first.name} failed: {first.message}"
        record_failure(cache, plan, stage, reason, None)
        raise log.failed(reason, cause=diagnose([first.message]), debug=shell_hint(plan, stage))


def check_installs(engine: Engine, cache: Cache, plan: Plan, image_of: Callable[[Stage], str], log: StageLog) -> None:
    """For the images that merge every component (built, not yet normalised), on the components'
    normalised images: no file installed by two of them. Checked once per set of stage images (both
    finals, and later builds of them, find the record)."""
    if not plan.installs:
        return
    checked = digest({name: plan.stages[name].key for name in ["toolkit", *sorted(plan.installs)]})
    with cache.locks.exclusive(f"installs-{checked}"):
        if cache.records.read("installs", checked) is None:
            _list_and_compare(engine, cache, plan, image_of, log)
            cache.records.write({"collisions": 0}, "installs", checked)


def _list_and_compare(
    engine: Engine, cache: Cache, plan: Plan, image_of: Callable[[Stage], str], log: StageLog
) -> None:
    every_path = sorted({path for paths in plan.installs.values() for path in paths})
    try:
        listings = {
            cid: _listed(engine, cache, image_of(plan.stages[cid]), paths) for cid, paths in plan.installs.items()
        }
        toolkit = _listed(engine, cache, image_of(plan.stages["toolkit"]), every_path)
    except EngineError as err:
        raise log.failed(f"cannot list the components' installs: {err}") from err
    needs = {cid: set(deps) for cid, deps in plan.needs.items()}
    if problems := collisions(added_files(listings, toolkit, needs)):
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise log.failed(f"{problems[0]}{more}: each file belongs to one component's installs", log_tail=problems[1:10])


def _listed(engine: Engine, cache: Cache, image: str, paths: Sequence[str]) -> dict[str, str]:
    """installed_files of image, remembered by its id (an image id names its files: a component not
    rebuilt is not listed again when another one was)."""
    image_id = engine.image_id(image)
    if image_id is None:
        return installed_files(engine, image, paths)
    key = digest({"image": image_id, "paths": sorted(paths), "lister": LISTER})
    known = cache.records.read(LISTINGS, key)
    if known is not None and isinstance(files := known.get("files"), dict):
        return {str(path): str(sha) for path, sha in files.items()}
    listed = installed_files(engine, image_id, paths)  # by id: the image the record is named by
    with contextlib.suppress(OSError):  # a full disk only forgets it
        cache.records.write({"files": listed, "image": image_id}, LISTINGS, key)
    return listed
