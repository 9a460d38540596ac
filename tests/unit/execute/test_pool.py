"""A pool of engines on fake engines sharing one fake registry: the stages spread over both, none
built twice, parents built elsewhere brought through the registry, the finals on the first engine;
the stages on the engines of the plan's architecture only, unless the pool has none.
(tests/docker/test_pool.py does it with two real daemons and a real registry.)"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from builder.execute.pipeline import BuildOptions, execute, find_cached
from builder.execute.pool import EnginePool
from builder.execute.routing import Reported, Routing
from builder.execute.stage_registry import RegistryCache
from builder.model.arch import Arch
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


def pooled(tmp_path: Path, *arches: Arch) -> list[FakeEngine]:
    """A pool of fake engines reporting these architectures, sharing one registry, which built the
    golden plan (x86_64) one stage at a time per engine."""
    plan = plan_without_contexts()
    shared: dict[str, str] = {}
    engines = [FakeEngine(registry=shared, build_seconds=0.2, parents_must_exist=True, arch=arch) for arch in arches]
    options = BuildOptions(
        jobs=1,
        live=False,
        log_dir=tmp_path / "logs",
        registry=RegistryCache(push_to="127.0.0.1:5000/cache"),
        more_engines=tuple((f"engine{i}", engine) for i, engine in enumerate(engines[1:], start=1)),
        engine_name="engine0",
    )
    built = execute(find_cached(plan, engines[0]), engines[0], Cache(tmp_path / "cache"), options, print)
    assert set(built.built) == set(plan.stages)
    for final in FINALS:  # gathered on the first engine, whatever its architecture
        assert plan.stages[final].tag() in engines[0].tagged
    return engines


def built_on(engine: FakeEngine) -> set[str]:
    return {event.removeprefix("build ") for event in engine.events if event.startswith("build ")}


def test_stages_go_to_the_engines_of_their_architecture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    aarch64, first_x86, second_x86 = pooled(tmp_path, Arch.AARCH64, Arch.X86_64, Arch.X86_64)
    stages = set(plan_without_contexts().stages)
    assert not built_on(aarch64)
    assert built_on(first_x86) | built_on(second_x86) == stages
    assert built_on(first_x86) and built_on(second_x86)  # spread over both native engines
    said, err = capsys.readouterr()
    assert "engines: x86_64 stages build natively on engine1, engine2; none on engine0 (aarch64)" in said
    assert err.count("building - on engine1 (native)") + err.count("building - on engine2 (native)") == len(stages)


def test_jobs_are_per_engine_routed_to(tmp_path: Path) -> None:
    """--jobs 1 on a pool of two engines, one of the plan's architecture: one stage at a time, there."""
    aarch64, x86 = pooled(tmp_path, Arch.AARCH64, Arch.X86_64)
    assert (aarch64.max_active, x86.max_active) == (0, 1)


def aarch64_plan() -> Plan:
    """The golden plan for aarch64: the platform is in every key, so none is the x86_64 plan's."""
    plan = plan_without_contexts()
    stages = {
        name: dataclasses.replace(stage, inputs=dataclasses.replace(stage.inputs, platform=Arch.AARCH64.platform))
        for name, stage in plan.stages.items()
    }
    return dataclasses.replace(plan, arch=Arch.AARCH64, stages=stages)


def test_a_publish_builds_each_architecture_on_its_own_engines(tmp_path: Path) -> None:
    """publish's builds, one per architecture with the same engines (chain.published): each plan's stages
    on the engine of its architecture, the finals of both on the first, which pushes them."""
    shared: dict[str, str] = {}
    x86, arm = (FakeEngine(registry=shared, parents_must_exist=True, arch=arch) for arch in (Arch.X86_64, Arch.AARCH64))
    options = BuildOptions(
        jobs=1,
        live=False,
        log_dir=tmp_path / "logs",
        registry=RegistryCache(push_to="127.0.0.1:5000/cache"),
        more_engines=(("arm", arm),),
        engine_name="x86",
    )
    plans = [plan_without_contexts(), aarch64_plan()]
    for plan in plans:
        execute(find_cached(plan, x86), x86, Cache(tmp_path / "cache"), options, print)
        assert all(plan.stages[final].tag() in x86.tagged for final in FINALS)
    assert built_on(x86) == built_on(arm) == set(plans[0].stages)  # each engine built its architecture's stages
    assert all(s.tag() not in arm.tagged for s in plans[0].order())  # and none of the other's


def test_with_no_engine_of_its_architecture_every_engine_builds_under_emulation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = pooled(tmp_path, Arch.AARCH64, Arch.AARCH64)
    assert built_on(first) and built_on(second)
    said, err = capsys.readouterr()
    assert "engines: x86_64 stages build under emulation on engine0 (aarch64), engine1 (aarch64)" in said
    assert "(native)" not in err and "(emulated)" in err


def test_among_the_engines_routed_to_a_stage_goes_where_its_parents_were_built() -> None:
    plan = plan_without_contexts()
    engines = (Reported("arm", Arch.AARCH64), Reported("a", Arch.X86_64), Reported("b", Arch.X86_64))
    pool = EnginePool([], Routing(Arch.X86_64, engines))
    pool.assigned["base-devel"] = 2
    assert pool._pick(plan.stages["toolkit"]) == 2  # its parent's engine, not the lower-numbered one
    assert pool._pick(plan.stages["base-runtime"]) == 1  # no parent: the least busy
    pool.assigned |= {"toolkit": 0, "devkit": 0}  # parents on an engine it is not routed to: not followed there
    pool.busy.clear()
    assert pool._pick(plan.stages["kernels"]) == 1
