"""The build chain's run of a plan (builder.execute.pipeline) on a fake engine: what is cached and
what must be built, the registry cache asked for every stage at once, and a smoke pass recorded for
its image and its smoke."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.execute.pipeline import BuildOptions, execute, find_cached
from builder.execute.stage_log import StageFailed
from builder.execute.stage_registry import RegistryCache
from builder.manifest.model import Smoke
from builder.plan.plan_model import Plan
from builder.plan.why import record_build, why
from builder.store.cache import Cache
from tests.fake_engine import FakeEngine
from tests.golden_plan import without_contexts as _without_contexts


def test_present_finals_need_nothing_else(golden: Plan) -> None:
    engine = FakeEngine(present={golden.stages["devel-image"].tag(), golden.stages["runtime-image"].tag()})
    work = find_cached(golden, engine)
    assert work.to_build == frozenset()
    assert set(work.present) == {"devel-image", "runtime-image"}


def test_missing_final_walks_down_to_present_parents(golden: Plan, tmp_path: Path) -> None:
    missing = {"kernels", "runtime-image", "devel-image"}
    engine = FakeEngine(present={s.tag() for s in golden.order() if s.name not in missing})
    work = find_cached(golden, engine)
    assert work.to_build == missing
    cache = Cache(tmp_path)
    assert why(cache, golden, golden.stages["kernels"]) == "never built here"
    record_build(cache, golden, golden.stages["kernels"])
    assert why(cache, golden, golden.stages["kernels"]) == "image missing (removed since it was built)"


def test_a_recorded_smoke_pass_is_for_that_image_and_that_smoke(golden: Plan, tmp_path: Path) -> None:
    from builder.execute.pipeline import StagesBuilt, Tagged, smoke

    engine, cache = FakeEngine(), Cache(tmp_path)
    tagged = Tagged(StagesBuilt(golden, {}, (), ()), dict(golden.final_tags))
    first = Smoke(command="launch", expect="success", needs_device=False)
    engine.smoke_output = "success"
    assert smoke(tagged, first, engine, cache, ()).passed and len(engine.runs) == 1
    assert smoke(tagged, first, engine, cache, ()).summary == "launch: passed (recorded for this image key)"
    assert len(engine.runs) == 1
    changed = Smoke(command="launch", expect="other", needs_device=False)
    assert not smoke(tagged, changed, engine, cache, ()).passed and len(engine.runs) == 2  # ran again, and failed


def test_stages_in_the_registry_cache_are_pulled_at_once_and_probed_beside_their_parents(
    golden: Plan, tmp_path: Path
) -> None:
    """Every stage asked of the registry cache when the run starts; a pulled child is probed while its
    parent's probes still run, and tagged only after it. A stage whose parent fails is not tagged, and
    the image pulled for it keeps no registry name."""
    plan = _without_contexts(golden)
    where = "127.0.0.1:5000/team/cache"
    refs = {s.name: RegistryCache.ref(where, s) for s in plan.order()}
    engine = FakeEngine(registry={ref: f"sha256:pulled-{name}" for name, ref in refs.items()})
    engine.probe_seconds["sha256:pulled-base-devel"] = 0.5
    options = BuildOptions(jobs=1, live=False, log_dir=tmp_path / "logs", registry=RegistryCache(pull_from=where))
    built = execute(find_cached(plan, engine), engine, Cache(tmp_path / "cache"), options, lambda line: None)
    assert set(built.pulled) == set(plan.stages) and built.built == ()
    assert sorted(engine.pulled) == sorted(refs.values())  # each asked once
    probed = [event for event in engine.events if event.startswith("probed")]
    assert probed.index("probed sha256:pulled-toolkit") < probed.index("probed sha256:pulled-base-devel")
    assert all(engine.tagged[s.tag()] == f"sha256:pulled-{s.name}" for s in plan.order())
    # The toolkit's pushed image fails its probes: what is built on it is not taken from the cache.
    broken = FakeEngine(registry={ref: f"sha256:pulled-{name}" for name, ref in refs.items()}, probe_ok=True)
    broken.failing_probes = {"sha256:pulled-toolkit"}
    broken.fail_build = "FROM"  # built after all, the toolkit fails too: the run stops there
    with pytest.raises(StageFailed, match="stage toolkit failed"):
        execute(find_cached(plan, broken), broken, Cache(tmp_path / "cache2"), options, lambda line: None)
    assert plan.stages["kernels"].tag() not in broken.tagged
    assert not any(ref in broken.tagged and ref not in broken.removed for ref in refs.values())


def test_a_pulled_stage_that_fails_its_probes_waits_for_its_parents_before_it_is_built(
    golden: Plan, tmp_path: Path
) -> None:
    """Started early (its image was in the registry cache), a stage whose pulled image fails its
    probes is built here after all: only once its parents are there (a build naming an image the
    engine lacks fails)."""
    plan = _without_contexts(golden)
    where = "127.0.0.1:5000/team/cache"
    engine = FakeEngine(
        registry={RegistryCache.ref(where, s): f"sha256:pulled-{s.name}" for s in plan.order()},
        parents_must_exist=True,
        failing_probes={"sha256:pulled-kernels"},
        probe_seconds={"sha256:pulled-toolkit": 0.5, "sha256:pulled-devkit": 0.5},
    )
    options = BuildOptions(jobs=2, live=False, log_dir=tmp_path / "logs", registry=RegistryCache(pull_from=where))
    built = execute(find_cached(plan, engine), engine, Cache(tmp_path / "cache"), options, lambda line: None)
    assert built.built == ("kernels",) and set(built.pulled) == set(plan.stages) - {"kernels"}
    assert engine.events.index("probed sha256:pulled-toolkit") < engine.events.index("build kernels")
    log = (tmp_path / "logs" / "golden" / "x86_64" / "kernels.log").read_text()
    assert "# the pulled image fails its probes (" in log
