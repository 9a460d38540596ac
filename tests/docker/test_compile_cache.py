"""The compile cache on the real engine (issue 54): after a one-file edit a component's build compiles
that file and takes every other object from ccache (its own statistics say so), and the component's
image is the same built with the cache cold, warm and off."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from builder.cli.configuration import cache_root
from builder.engine.docker_engine import DockerEngine
from builder.execute import compile_mounts
from builder.execute.stage_image import StageImages
from builder.store.cache import Cache
from tests.conftest import TEST_PREFIX
from tests.docker.conftest import plan_of, stackbuild, touch, write_variant

pytestmark = pytest.mark.docker

SOURCES = 8  # translation units of the generated component, each including one shared header
STATS = re.compile(r"stackbuild: many: compile cache: (\d+) hits, (\d+) misses")


@pytest.fixture(scope="module")
def cctest(workspace: Path) -> str:
    """The reference stack with one more component: SOURCES C files built by make through `cc`."""
    source = workspace / "stacks" / "many"
    source.mkdir(exist_ok=True)
    (source / "many.h").write_text("#define SCALE 3\nint scaled(int value);\n")
    for n in range(SOURCES):
        body = f'#include "many.h"\nint part{n}(int x) {{ return x * SCALE + {n}; }}\n'
        (source / f"part{n}.c").write_text(body)
    objects = " ".join(f"part{n}.o" for n in range(SOURCES))
    (source / "Makefile").write_text(
        f"libmany.a: {objects}\n\tar rcD $@ $^\n%.o: %.c many.h\n\t$(CC) -O2 -g -c $< -o $@\n"
    )
    component = "components:\n  - id: many\n    source: {path: many}\n    build: [make -j2]\n"
    name = write_variant(workspace, "cctest", [("components:\n", component)])
    stackbuild(workspace, "lock", name, check=True)
    return name


def _stats(log: Path) -> tuple[int, int]:
    found = STATS.findall(log.read_text())
    assert len(found) == 1, log.read_text()[-3000:]
    return int(found[0][0]), int(found[0][1])


def test_after_a_one_file_edit_every_other_translation_unit_is_a_cache_hit(workspace: Path, cctest: str) -> None:
    stackbuild(workspace, "build", cctest, "--no-smoke", check=True)
    touch(workspace / "stacks" / "many" / "part3.c")
    stackbuild(workspace, "lock", cctest, check=True)  # a path source edited: its lock follows
    stackbuild(workspace, "build", cctest, "--no-smoke", check=True)
    assert _stats(workspace / ".stackbuild" / "logs" / cctest / "x86_64" / "many.log") == (SOURCES - 1, 1)


def test_the_image_is_the_same_with_the_cache_cold_warm_and_off(
    workspace: Path, cctest: str, engine: DockerEngine, tmp_path: Path
) -> None:
    """Each a fresh build of the component's stage (no step taken from BuildKit's own cache) on the
    toolkit, normalised as every stage is: only the compile cache differs between them."""
    stackbuild(workspace, "build", cctest, "--no-smoke", check=True)
    plan = plan_of(workspace, cctest)
    stage, toolkit = plan.stages["many"], plan.stages["toolkit"].tag()
    for mount in compile_mounts.cache_mounts(engine, TEST_PREFIX).get("many", []):
        engine.remove_cache_mount(mount.id)  # cold

    def fresh(mode: str, cache_on: bool) -> tuple[str, Path]:
        builds = StageImages(plan, engine, Cache(cache_root(os.environ)), tmp_path, compile_cache=cache_on)
        log = tmp_path / f"{mode}.log"
        return builds.build_untagged(stage, log, {"toolkit": toolkit}, f"{mode}: failed", fresh=True), log

    (cold, cold_log), (warm, warm_log), (off, off_log) = fresh("cold", True), fresh("warm", True), fresh("off", False)
    assert _stats(cold_log) == (0, SOURCES)
    assert _stats(warm_log) == (SOURCES, 0)
    assert "# compile cache: off (--no-compile-cache)" in off_log.read_text() and not STATS.search(off_log.read_text())
    assert cold == warm == off == engine.image_id(stage.tag())
