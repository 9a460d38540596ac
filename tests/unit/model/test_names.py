"""The image prefix (the settings' image_prefix, from $STACKBUILD_IMAGE_PREFIX): every name stackbuild
gives an image is under it, and gc lists nothing outside it (the test suite's run leaves a user's
stackbuild/... images alone)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from builder.cli.configuration import resolve
from builder.handoff.gc import collect, find_garbage
from builder.model.errors import InputError
from builder.store.cache import Cache
from tests.conftest import ROOT, TEST_PREFIX
from tests.fake_engine import FakeEngine
from tests.golden_plan import golden_plan


def test_every_name_a_build_gives_an_image_is_under_the_prefix() -> None:
    plan = golden_plan(image_prefix="team-ci")
    stages = [name for s in plan.order() for name in (s.tag(), s.pending_tag(), s.as_built_tag(), s.failed_tag())]
    assert plan.repository == "team-ci/golden"
    assert all(name.startswith("team-ci/") for name in [*stages, *plan.final_tags.values()])
    assert plan.stages["toolkit"].tag().startswith("team-ci/stage/toolkit:")
    assert golden_plan().stages["toolkit"].tag().startswith("stackbuild/stage/toolkit:")  # stackbuild's own


def test_the_prefix_comes_from_the_environment_else_is_stackbuild(tmp_path: Path) -> None:
    assert resolve({"STACKBUILD_IMAGE_PREFIX": "team-ci"}, tmp_path).image_prefix == "team-ci"
    assert resolve({"STACKBUILD_IMAGE_PREFIX": ""}, tmp_path).image_prefix == "stackbuild"
    assert resolve({}, tmp_path).image_prefix == "stackbuild"


@pytest.mark.parametrize("prefix", ["a", "team.ci", "team_ci", "team__ci", "team--ci", "ci2"])
def test_a_prefix_that_is_one_repository_name_component_is_taken(prefix: str, tmp_path: Path) -> None:
    assert resolve({"STACKBUILD_IMAGE_PREFIX": prefix}, tmp_path).image_prefix == prefix


@pytest.mark.parametrize("prefix", ["Stackbuild", "team/ci", "-ci", "ci-", "ci..x", "ci___x", "ci x", "ci:1", "ci\n"])
def test_any_other_prefix_is_refused_before_a_name_is_made(prefix: str, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^STACKBUILD_IMAGE_PREFIX=.* is not one repository name component"):
        resolve({"STACKBUILD_IMAGE_PREFIX": prefix}, tmp_path)


def test_a_refused_prefix_is_bad_input_of_every_command(tmp_path: Path) -> None:
    """Said once, as bad input (exit 2, no traceback), before the command does anything."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONPATH": str(ROOT),
        "STACKBUILD_IMAGE_PREFIX": "Team/CI",
    }
    done = subprocess.run(
        [sys.executable, "-m", "builder", "--root", str(ROOT), "plan", "reference"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr.strip().splitlines()[-1].startswith("stackbuild: error: STACKBUILD_IMAGE_PREFIX='Team/CI' is not")
    )
    assert "Traceback" not in done.stderr


def test_gc_lists_and_removes_nothing_outside_its_prefix(tmp_path: Path) -> None:
    """The suite's gc (its prefix, tests/conftest.py) beside a user's images of every kind gc removes."""
    users = [f"stackbuild/{kind}/kernels:" + "1" * 64 for kind in ("stage", "pending", "failed")]
    users.append("stackbuild/reference:8.5.0-910b-debian12-py3.11-x86_64-dirty")
    ours = [f"{TEST_PREFIX}/{kind}/kernels:" + "2" * 64 for kind in ("stage", "pending", "failed")]
    engine = FakeEngine()
    for n, tag in enumerate(users + ours):
        engine.tag(f"sha256:{n}", tag)
    cache = Cache(tmp_path / "cache")
    garbage = find_garbage(engine, cache, keep=1, inputs=False, include_recent=True, image_prefix=TEST_PREFIX)
    assert sorted(tag for tag, _ in garbage.images) == sorted(ours)
    collect(engine, cache, garbage)
    assert sorted(engine.removed) == sorted(ours)
