"""The image prefix ($STACKBUILD_IMAGE_PREFIX): every name stackbuild gives an image is under it, and gc
lists nothing outside it (the test suite's run leaves a user's stackbuild/... images alone)."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.handoff.gc import collect, find_garbage
from builder.model.errors import InputError
from builder.model.names import image_prefix
from builder.store.cache import Cache
from tests.conftest import TEST_PREFIX
from tests.fake_engine import FakeEngine
from tests.golden_plan import golden_plan


def test_every_name_a_build_gives_an_image_is_under_the_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STACKBUILD_IMAGE_PREFIX", "team-ci")
    plan = golden_plan()
    stages = [name for s in plan.order() for name in (s.tag(), s.pending_tag(), s.as_built_tag(), s.failed_tag())]
    assert plan.repository == "team-ci/golden"
    assert all(name.startswith("team-ci/") for name in [*stages, *plan.final_tags.values()])
    assert plan.stages["toolkit"].tag().startswith("team-ci/stage/toolkit:")
    monkeypatch.delenv("STACKBUILD_IMAGE_PREFIX")  # unset: stackbuild's own
    assert golden_plan().stages["toolkit"].tag().startswith("stackbuild/stage/toolkit:")


@pytest.mark.parametrize("prefix", ["a", "team.ci", "team_ci", "team__ci", "team--ci", "ci2"])
def test_a_prefix_that_is_one_repository_name_component_is_taken(prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STACKBUILD_IMAGE_PREFIX", prefix)
    assert image_prefix() == prefix


@pytest.mark.parametrize("prefix", ["Stackbuild", "team/ci", "-ci", "ci-", "ci..x", "ci___x", "ci x", "ci:1", "ci\n"])
def test_any_other_prefix_is_refused_before_a_name_is_made(prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STACKBUILD_IMAGE_PREFIX", prefix)
    with pytest.raises(InputError, match=r"^STACKBUILD_IMAGE_PREFIX=.* is not one repository name component"):
        golden_plan()


def test_gc_lists_and_removes_nothing_outside_its_prefix(tmp_path: Path) -> None:
    """The suite's gc (its prefix, tests/conftest.py) beside a user's images of every kind gc removes."""
    users = [f"stackbuild/{kind}/kernels:" + "1" * 64 for kind in ("stage", "pending", "failed")]
    users.append("stackbuild/reference:8.5.0-910b-debian12-py3.11-x86_64-dirty")
    ours = [f"{TEST_PREFIX}/{kind}/kernels:" + "2" * 64 for kind in ("stage", "pending", "failed")]
    engine = FakeEngine()
    for n, tag in enumerate(users + ours):
        engine.tag(f"sha256:{n}", tag)
    cache = Cache(tmp_path / "cache")
    garbage = find_garbage(engine, cache, keep=1, inputs=False, include_recent=True)
    assert sorted(tag for tag, _ in garbage.images) == sorted(ours)
    collect(engine, cache, garbage)
    assert sorted(engine.removed) == sorted(ours)
