"""Scheduling and reporting logic of the builder, with a fake engine (no Docker).

The real engine runs the same code in tests/docker; here only the order, the parallelism
limit, the failure handling and the cached-from-the-top walk are checked.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from builder import build, lock, manifest, plan
from builder.fetch import Cache
from builder.siteconfig import SiteConfig
from builder.smoke import device_flags
from tests.unit.test_render import GOLDEN


class FakeEngine:
    def __init__(self, present: set[str]) -> None:
        self.present = set(present)
        self.tags: dict[str, str] = {}

    def image_id(self, ref: str) -> str | None:
        return f"sha256:{abs(hash(ref))}" if ref in self.present or ref in self.tags else None

    def tag(self, image_id: str, ref: str) -> None:
        self.tags[ref] = image_id


class FakeBuilder(build.Builder):
    """Stage builds that take a moment and record how many ran at once."""

    def __init__(self, engine: FakeEngine, cache: Cache, logs: Path, jobs: int = 2, fail: str | None = None) -> None:
        loaded = manifest.load(GOLDEN / "golden.yaml")
        super().__init__(loaded, lock.read(GOLDEN / "golden.lock.json"), GOLDEN, SiteConfig(), cache, logs, jobs=jobs)
        self.fake, self.fail = engine, fail
        self.order: list[str] = []
        self.active = 0
        self.max_active = 0
        self.guard = threading.Lock()

    def engine(self) -> FakeEngine:  # type: ignore[override]
        return self.fake

    def build_stage(self, plan_: plan.Plan, stage: plan.Stage, log_file: Path, report: object) -> str:
        with self.guard:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            self.order.append(stage.name)
        time.sleep(0.05)
        with self.guard:
            self.active -= 1
        if stage.name == self.fail:
            raise build.StageFailed(stage.name, "probe x failed: broken", [], log_file, None)
        self.fake.tags[stage.tag()] = f"sha256:{stage.key}"
        return f"sha256:{stage.key}"


@pytest.fixture
def golden() -> plan.Plan:
    loaded = manifest.load(GOLDEN / "golden.yaml")
    return plan.make_plan(loaded, lock.read(GOLDEN / "golden.lock.json"), GOLDEN, "x86_64")


def make(tmp_path: Path, present: set[str], jobs: int = 2, fail: str | None = None) -> FakeBuilder:
    return FakeBuilder(FakeEngine(present), Cache(tmp_path / "cache"), tmp_path / "logs", jobs, fail)


def test_builds_in_dependency_order_within_the_job_limit(tmp_path: Path, golden: plan.Plan) -> None:
    builder = make(tmp_path, set(), jobs=2)
    result = builder.run(golden, live=False)
    position = {name: i for i, name in enumerate(builder.order)}
    for stage in golden.order():
        assert all(position[p] < position[stage.name] for p in stage.parents), stage.name
    assert builder.max_active == 2  # base-devel and base-runtime, then the two finals, ran together
    assert set(result.tags) == {"devel-image", "runtime-image"}
    assert result.tags["runtime-image"] == "stackbuild/golden:8.5.0-910b-ubuntu22.04-py3.11"


def test_failure_skips_what_depends_on_it(tmp_path: Path, golden: plan.Plan) -> None:
    builder = make(tmp_path, set(), fail="devkit")
    with pytest.raises(build.StageFailed, match="stage devkit failed: probe x failed: broken"):
        builder.run(golden, live=False)
    assert "kernels" not in builder.order and "devel-image" not in builder.order


def test_present_finals_need_nothing_else(tmp_path: Path, golden: plan.Plan) -> None:
    finals = {golden.stages["devel-image"].tag(), golden.stages["runtime-image"].tag()}
    builder = make(tmp_path, finals)
    result = builder.run(golden, live=False)
    assert builder.order == []
    assert {s.state for s in result.statuses.values()} == {"cached"}


def test_missing_final_walks_down_to_present_parents(tmp_path: Path, golden: plan.Plan) -> None:
    present = {s.tag() for s in golden.order() if s.name not in ("kernels", "runtime-image", "devel-image")}
    builder = make(tmp_path, present)
    builder.run(golden, live=False)
    assert sorted(builder.order) == ["devel-image", "kernels", "runtime-image"]
    assert plan.why(builder.cache, golden, golden.stages["kernels"]) == "image missing (removed since it was built)"


def test_device_flags_are_the_canonical_ones() -> None:
    flags = " ".join(device_flags(["/dev/davinci0"]))
    for expected in (
        "--device /dev/davinci0",
        "--device /dev/davinci_manager",
        "--device /dev/devmm_svm",
        "--device /dev/hisi_hdc",
        "-v /usr/local/Ascend/driver/lib64/:/usr/local/Ascend/driver/lib64/:ro",
        "-v /etc/ascend_install.info:/etc/ascend_install.info:ro",
    ):
        assert expected in flags
