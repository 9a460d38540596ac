"""`plan --engine ...`: which of the engines a build would use build the plan's stages, natively or
under emulation, each engine by the architecture it reports (fakes: the routing itself is
tests/unit/execute/test_routing.py's)."""

from __future__ import annotations

import json

import pytest

from builder.cli.context import Context
from builder.model.arch import Arch
from tests.fake_engine import FakeEngine
from tests.helpers import run_cli

FIRST, SECOND = "unix:///run/first.sock", "tcp://second:2376"


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch) -> dict[str, FakeEngine]:
    """The first engine on aarch64, the second on x86_64, found by their addresses."""
    made = {FIRST: FakeEngine(arch=Arch.AARCH64), SECOND: FakeEngine(arch=Arch.X86_64)}
    monkeypatch.setattr(Context, "engine", lambda _, url=None: made[url])
    return made


def test_plan_says_which_engines_build_the_stages_and_how(
    engines: dict[str, FakeEngine], capsys: pytest.CaptureFixture[str]
) -> None:
    pool = ("--engine", FIRST, "--engine", SECOND)
    code, out, _ = run_cli(capsys, "plan", "reference", "--arch", "x86_64", *pool)
    assert code == 0
    assert out.splitlines()[-1] == f"engines: x86_64 stages build natively on {SECOND}; none on {FIRST} (aarch64)"
    code, out, _ = run_cli(capsys, "plan", "reference", "--arch", "aarch64", "--engine", SECOND)
    assert out.splitlines()[-1] == (
        f"engines: aarch64 stages build under emulation on {SECOND} (x86_64): no engine reports aarch64"
    )
    code, out, _ = run_cli(capsys, "plan", "reference", "--arch", "aarch64", *pool, "--json")
    assert json.loads(out)["routing"] == {
        "native": True,
        "engines": [
            {"name": FIRST, "arch": "aarch64", "builds": True},
            {"name": SECOND, "arch": "x86_64", "builds": False},
        ],
    }
