"""The compile cache on the real engine (issue 54): after a one-file edit a component's build compiles
that file and takes every other object from ccache (its own statistics say so) and its system packages'
layer is not sent to the engine again, and the component's image is the same built with the cache
cold, warm and off."""

from __future__ import annotations

import contextlib
import random
import re
import uuid
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from builder.engine.docker_engine import DockerEngine
from builder.execute import compile_mounts
from tests.conftest import TEST_PREFIX
from tests.docker.conftest import plan_of, stackbuild, write_variant

pytestmark = pytest.mark.docker

SOURCES = 8  # translation units of the generated component, each including one shared header
STATS = re.compile(r"stackbuild: many: compile cache: (\d+) hits, (\d+) misses, (\d+) preprocessor-mode lookups")


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
    # g++: system packages of more file data than FOLD_BELOW, a layer of the stage's own under the build's.
    component = (
        "components:\n  - id: many\n    source: {path: many}\n    system_packages: [g++]\n    build: [make -j2]\n"
    )
    name = write_variant(workspace, "cctest", [("components:\n", component)])
    stackbuild(workspace, "lock", name, check=True)
    return name


def _stats(log: Path) -> tuple[int, int, int]:
    """The build's (hits, misses, preprocessor-mode lookups): in depend mode none, so no preprocessor run."""
    found = STATS.findall(log.read_text())
    assert len(found) == 1, log.read_text()[-3000:]
    return int(found[0][0]), int(found[0][1]), int(found[0][2])


def _edit(source: Path) -> None:
    """Code a compiler sees (ccache's depend mode takes a comment for a change too, its preprocessor mode would not)."""
    with source.open("a") as file:
        file.write(f"int touched_{uuid.uuid4().hex}(void) {{ return 1; }}\n")


def test_after_a_one_file_edit_every_other_translation_unit_is_a_cache_hit(workspace: Path, cctest: str) -> None:
    stackbuild(workspace, "build", cctest, "--no-smoke", check=True)
    _edit(workspace / "stacks" / "many" / "part3.c")
    stackbuild(workspace, "lock", cctest, check=True)  # a path source edited: its lock follows
    stackbuild(workspace, "build", cctest, "--no-smoke", check=True)
    logs = workspace / ".stackbuild" / "logs" / cctest / "x86_64"
    assert _stats(logs / "many.log") == (SOURCES - 1, 1, 0)
    # Nor is the system packages' layer under it sent to the engine again: it holds it from the first
    # build, in the component's image and in the devel image (their small layers above it folded).
    held = re.compile(
        r"^# normalised to \S+ in \S+ from the data root, [1-9]\d* of \d+ own layer\(s\) held as rewritten before", re.M
    )
    for stage in ("many", "devel-image"):
        assert held.search((logs / f"{stage}.log").read_text()), (logs / f"{stage}.log").read_text()[-2000:]


def test_the_images_are_the_same_with_the_cache_cold_warm_and_off(
    workspace: Path, cctest: str, engine: DockerEngine
) -> None:
    """The component's stage and the devel image holding it, built again each time: their images gone
    and BuildKit's record of build steps pruned (its cache mounts kept), so the build step runs."""
    plan = plan_of(workspace, cctest)
    again = [plan.stages[name] for name in ("many", "devel-image", "runtime-image")]
    log = workspace / ".stackbuild" / "logs" / cctest / "x86_64" / "many.log"

    def built(*flags: str) -> tuple[str | None, ...]:
        for stage in again:
            with contextlib.suppress(docker.errors.ImageNotFound):
                engine.client.images.remove(stage.tag())
        for kind in ("regular", "source.local"):  # every step's record; not the cache mounts (exec.cachemount)
            api: Any = engine.client.api  # its stubs know the until and dangling filters only
            api.prune_builds(filters={"type": [kind]})
        stackbuild(workspace, "build", cctest, "--no-smoke", *flags, check=True)
        return tuple(engine.image_id(stage.tag()) for stage in again)

    stackbuild(workspace, "build", cctest, "--no-smoke", check=True)
    for mount in compile_mounts.cache_mounts(engine, TEST_PREFIX).get("many", []):
        engine.remove_cache_mount(mount.id)
    cold = built()
    assert _stats(log) == (0, SOURCES, 0)
    warm = built()
    assert _stats(log) == (SOURCES, 0, 0)
    off = built("--no-compile-cache")
    assert "# compile cache: off (--no-compile-cache)" in log.read_text() and not STATS.search(log.read_text())
    assert cold == warm == off and None not in cold


def test_a_header_an_mmd_list_leaves_out_is_hashed_all_the_same(workspace: Path, engine: DockerEngine) -> None:
    """A build whose dependency list leaves system headers out (-MMD) and that includes one through
    -isystem: after that header's edit its unit is compiled again, through ccache's preprocessor mode.
    In depend mode ccache would hash no -isystem header and hand back the object of the old one."""
    source = workspace / "stacks" / "isys"
    (source / "sys").mkdir(parents=True, exist_ok=True)
    header = source / "sys" / "value.h"
    # Values of this run alone: neither BuildKit nor ccache holds a build of them from an earlier run.
    first, second = random.sample(range(1, 1 << 30), 2)
    header.write_text(f"#define VALUE {first}\n")
    (source / "main.c").write_text(
        '#include <stdio.h>\n#include <value.h>\nint main(void) { printf("value %d\\n", VALUE); }\n'
    )
    (source / "Makefile").write_text(
        "isys: main.o\n\t$(CC) -o $@ $^\nmain.o: main.c\n\t$(CC) -isystem sys -MMD -O2 -c main.c -o $@\n"
    )
    component = (
        "components:\n  - id: isys\n    source: {path: isys}\n    build: [make]\n    artifacts:\n      - {path: isys}\n"
    )
    name = write_variant(workspace, "ccsys", [("components:\n", component)])
    log = workspace / ".stackbuild" / "logs" / name / "x86_64" / "isys.log"
    stats = re.compile(r"stackbuild: isys: compile cache: (\d+) hits, (\d+) misses, (\d+) preprocessor-mode lookups")

    def printed() -> str:
        stackbuild(workspace, "lock", name, check=True)
        stackbuild(workspace, "build", name, "--no-smoke", check=True)
        return engine.run(plan_of(workspace, name).stages["isys"].tag(), ["/opt/stack/isys/isys"]).output

    assert printed() == f"value {first}\n"
    header.write_text(f"#define VALUE {second}\n")
    assert printed() == f"value {second}\n"
    assert [tuple(map(int, found)) for found in stats.findall(log.read_text())] == [(0, 1, 1)]
