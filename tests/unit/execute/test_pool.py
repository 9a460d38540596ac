"""A pool of engines on fake engines sharing one fake registry: the stages spread over both, none
built twice, parents built elsewhere brought through the registry, the finals on the first engine.
(tests/docker/test_pool.py does it with two real daemons and a real registry.)"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from builder.execute.pipeline import BuildOptions, execute, find_cached
from builder.execute.stage_registry import RegistryCache
from builder.model.errors import InputError
from builder.plan.plan_model import FINALS, Plan
from builder.store.cache import Cache
from tests.fake_engine import FakeEngine
from tests.golden_plan import golden_plan


def plan_without_contexts() -> Plan:
    plan = golden_plan()
    return dataclasses.replace(plan, stages={n: dataclasses.replace(s, context=()) for n, s in plan.stages.items()})


def test_stages_spread_over_the_engines_each_built_once(tmp_path: Path) -> None:
    plan = plan_without_contexts()
    shared: dict[str, str] = {}
    first, second = (FakeEngine(registry=shared, build_seconds=0.2, parents_must_exist=True) for _ in range(2))
    options = BuildOptions(
        jobs=1,
        live=False,
        log_dir=tmp_path / "logs",
        registry=RegistryCache(push_to="127.0.0.1:5000/cache"),
        more_engines=(("second", second),),
        engine_name="first",
    )
    built = execute(find_cached(plan, first), first, Cache(tmp_path / "cache"), options, print)
    assert set(built.built) == set(plan.stages)
    # Each stage's own build, and the environment added to the stages that have one (toolkit, runtime).
    builds = [d for e in (first, second) for d in e.dockerfiles]
    assert first.dockerfiles and second.dockerfiles  # each engine built at least one stage
    assert len(builds) == len(plan.stages)  # none twice
    assert sum(len(e.configured) for e in (first, second)) == sum(1 for s in plan.order() if s.env_capture)
    for final in FINALS:  # the results are on the first engine, whichever built them
        assert plan.stages[final].tag() in first.tagged
    # Some stage travelled: tagged on an engine that did not build it.
    brought = [
        s.name
        for e in (first, second)
        for s in plan.order()
        if s.tag() in e.tagged and f"build {s.name}" not in e.events
    ]
    assert brought


def test_a_pool_needs_a_registry_to_share_through(tmp_path: Path) -> None:
    plan = plan_without_contexts()
    options = BuildOptions(jobs=1, live=False, log_dir=tmp_path, more_engines=(("second", FakeEngine()),))
    with pytest.raises(InputError, match="pass --cache-to"):
        execute(find_cached(plan, FakeEngine()), FakeEngine(), Cache(tmp_path / "cache"), options, print)
