"""Routing a plan's stages by architecture: the engines that report the plan's architecture build
them; with none, every engine does, under emulation; an engine that does not answer, or runs on a
machine stackbuild names no architecture for, is of none. (tests/unit/execute/test_pool.py builds
through a routed pool; tests/docker/test_pool.py with two daemons.)"""

from __future__ import annotations

from builder.execute.routing import Reported, Routing, report, route
from builder.model.arch import Arch
from tests.fake_engine import FakeEngine

X86, ARM = Arch.X86_64, Arch.AARCH64


def test_the_engines_of_the_plans_architecture_build_it_natively() -> None:
    engines = [("a", FakeEngine(arch=X86)), ("b", FakeEngine(arch=ARM)), ("c", FakeEngine(arch=X86))]
    routing = route(X86, engines)
    assert (routing.native, routing.eligible, routing.how()) == (True, (0, 2), "native")
    assert routing.line() == "engines: x86_64 stages build natively on a, c; none on b (aarch64)"
    assert route(ARM, engines).eligible == (1,)  # the other architecture's plan: the other engine


def test_without_an_engine_of_its_architecture_every_engine_builds_it_under_emulation() -> None:
    routing = route(ARM, [("a", FakeEngine(arch=X86)), ("b", FakeEngine(unanswered=True))])
    assert (routing.native, routing.eligible, routing.how()) == (False, (0, 1), "emulated")
    assert routing.line() == (
        "engines: aarch64 stages build under emulation on a (x86_64), b (architecture unknown: cannot ask the "
        "engine about itself: fake): no engine reports aarch64"
    )
    assert routing.as_json() == {
        "native": False,
        "engines": [{"name": "a", "arch": X86, "builds": True}, {"name": "b", "arch": None, "builds": True}],
    }


def test_an_engine_that_does_not_answer_or_names_no_known_machine_is_of_no_architecture() -> None:
    assert report("gone", FakeEngine(unanswered=True)) == Reported(
        "gone", None, "cannot ask the engine about itself: fake"
    )
    assert report("s390x", FakeEngine(arch=None)) == Reported("s390x", None, "a machine stackbuild builds none of")
    # A native engine beside it: the unknown one builds none of the plan.
    beside = Routing(X86, (Reported("s390x", None, "a machine stackbuild builds none of"), Reported("a", X86)))
    assert (beside.eligible, beside.as_json()["native"]) == ((1,), True)
