"""The compile cache at build time (builder.execute.compile_mounts): only a component's build step gets
the mounts, the tool image is made once per engine, the compiler wrappers find the real compiler, and
`plan` and `gc` see one prefix's caches alone. The Docker tier proves the images the same with it."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
from pathlib import Path

import pytest

from builder.execute import bundle, compile_mounts
from builder.execute.stage_image import StageImages
from builder.handoff.gc import collect, find_garbage
from builder.inputs.site import SiteConfig
from builder.lock import io as lock_io
from builder.lock.locked import LockedDeb
from builder.lock.system import every_deb
from builder.model.arch import Arch
from builder.plan.compile_cache import WRAPPER, CompileCache, cache_dir
from builder.plan.plan_model import Plan
from builder.store.cache import Cache
from tests.conftest import ROOT
from tests.fake_engine import FakeEngine
from tests.unit.plan.test_compile_cache import reference_plan

MOUNTS = re.compile(r"--mount=\S+ ")


def _with_a_tool_at_hand(plan: Plan, cache: Cache, scratch: Path) -> Plan:
    """The plan with a tool .deb the cache holds, as a lock leaves it (its bytes do not matter to a fake engine)."""
    (scratch / "ccache.deb").write_bytes(b"not a real .deb")
    sha256 = cache.add_file(scratch / "ccache.deb")
    deb = LockedDeb(
        name="ccache", version="4.7", architecture="amd64", repository="http://deb.debian.org/debian",
        path="pool/main/c/ccache/ccache_4.7_amd64.deb", sha256=sha256, size=15,
    )  # fmt: skip
    stages = {
        name: dataclasses.replace(s, compile_cache=dataclasses.replace(s.compile_cache, tool=(deb,)))
        if isinstance(s.compile_cache, CompileCache)
        else s
        for name, s in plan.stages.items()
    }
    return dataclasses.replace(plan, stages=stages)


def test_only_the_build_step_gets_the_mounts_and_they_are_all_that_changes(tmp_path: Path) -> None:
    stage = reference_plan(tmp_path).stages["runtime"]
    assert isinstance(stage.compile_cache, CompileCache)
    mounted = compile_mounts.mounted(stage, stage.compile_cache, "stackbuild/compile-cache/ccache:1")
    changed = [(a, b) for a, b in zip(stage.dockerfile.splitlines(), mounted.splitlines(), strict=True) if a != b]
    assert len(changed) == 1 and changed[0][0].endswith('/opt/stackbuild/steps/runtime/build.sh"]')
    assert MOUNTS.sub("", mounted) == stage.dockerfile
    line = changed[0][1]
    assert "--mount=type=bind,from=stackbuild/compile-cache/ccache:1,target=/mnt " in line
    assert (
        f"--mount=type=cache,id={stage.compile_cache.cache_id},target={cache_dir('stackbuild')},sharing=locked" in line
    )


def test_a_build_mounts_the_cache_when_asked_and_the_engine_can(tmp_path: Path) -> None:
    """With it: the tool image made once for every component, each build step mounting it and its own
    cache. Without it (--no-compile-cache, or the classic builder): the Dockerfile as keyed."""
    cache = Cache(tmp_path / "cache")
    plan = _with_a_tool_at_hand(reference_plan(tmp_path), cache, tmp_path)
    parents = {p: f"parent-{p}" for p in ("toolkit", "tilelang", "tilelang-compiler", "ascend-kernel")}

    def built(engine: FakeEngine, on: bool, stage: str) -> str:
        builds = StageImages(plan, engine, cache, tmp_path / "logs", compile_cache=on)
        wanted = {p: parents[p] for p in plan.stages[stage].parents}
        builds.build_untagged(plan.stages[stage], tmp_path / "logs" / f"{stage}.log", wanted, "failed")
        return engine.dockerfiles[-1]

    engine = FakeEngine()
    for stage in ("ascend-kernel", "runtime"):
        assert "--mount=type=cache" in built(engine, True, stage)
    tools = [d for d in engine.dockerfiles if "dpkg-deb -x" in d]
    assert len(tools) == 1 and "FROM parent-toolkit AS unpack" in tools[0]
    assert "# compile cache: stackbuild-ccache-runtime-x86_64-" in (tmp_path / "logs" / "runtime.log").read_text()
    assert built(FakeEngine(), False, "runtime") == plan.stages["runtime"].dockerfile
    assert built(FakeEngine(classic=True), True, "runtime") == plan.stages["runtime"].dockerfile
    assert "the classic builder has no build-time mounts" in (tmp_path / "logs" / "runtime.log").read_text()


@pytest.fixture
def compilers(tmp_path: Path) -> Path:
    """A directory of 'compilers' that print how they were called, and the wrapper installed as cc."""
    real = tmp_path / "real"
    real.mkdir()
    (real / "cc").write_text('#!/bin/sh\necho "real cc: $*"\n')
    (real / "cc").chmod(0o755)
    wrappers = tmp_path / "wrappers"
    wrappers.mkdir()
    for name in ("cc", "c++"):
        (wrappers / name).write_text(WRAPPER)
        (wrappers / name).chmod(0o755)
    return tmp_path


@pytest.mark.skipif(os.path.exists("/mnt/stackbuild-compile-cache"), reason="this host has the tool at its mount point")
def test_a_wrapper_runs_the_compiler_of_its_name_after_it_on_path(compilers: Path) -> None:
    env = {"PATH": f"/opt/stackbuild/compilers:{compilers / 'real'}"}  # the wrapper needs no command but sh's own
    ran = subprocess.run([compilers / "wrappers" / "cc", "-c", "a b.c"], env=env, capture_output=True, text=True)
    assert (ran.returncode, ran.stdout) == (0, "real cc: -c a b.c\n")
    missing = subprocess.run([compilers / "wrappers" / "c++", "-c", "x.cc"], env=env, capture_output=True, text=True)
    assert (missing.returncode, missing.stderr) == (127, "c++: command not found\n")


def _mount(component: str, prefix: str) -> str:
    return f"cached mount {cache_dir(prefix)} from exec /bin/bash /opt/stackbuild/steps/{component}/build.sh"


def test_plan_shows_each_components_cache_and_what_the_engine_keeps_of_it(tmp_path: Path) -> None:
    plan = reference_plan(tmp_path)
    engine = FakeEngine(
        build_mounts={"a": (_mount("runtime", "stackbuild"), 3000), "b": (_mount("runtime", "stackbuild"), 500)}
    )
    engine.build_mounts["c"] = (_mount("runtime", "stackbuild-test"), 7000)  # another prefix's
    states = {state.component: state for state in compile_mounts.states(plan, engine)}
    assert states["runtime"].used and states["runtime"].size == 3500
    assert states["harness"].size == 0
    classic = compile_mounts.states(plan, dataclasses.replace(engine, classic=True))
    assert {(s.used, s.detail) for s in classic} == {(False, "the classic builder has no build-time mounts")}


def test_gc_keeps_the_compile_caches_unless_told_and_touches_no_other_prefixs(tmp_path: Path) -> None:
    engine = FakeEngine(
        build_mounts={"ours": (_mount("runtime", "team"), 3000), "theirs": (_mount("runtime", "stackbuild"), 500)}
    )
    engine.tag("sha256:tool", "team/compile-cache/ccache:1")
    engine.tag("sha256:their-tool", "stackbuild/compile-cache/ccache:1")
    cache = Cache(tmp_path / "cache")
    kept = find_garbage(engine, cache, keep=1, inputs=False, image_prefix="team")
    assert kept.compile_caches == (("runtime", "ours", 3000),) and not kept.removes_compile_caches
    collect(engine, cache, kept)
    assert set(engine.build_mounts) == {"ours", "theirs"} and engine.removed == []
    cleared = find_garbage(engine, cache, keep=1, inputs=False, image_prefix="team", each_compile_cache=True)
    collect(engine, cache, cleared)
    assert set(engine.build_mounts) == {"theirs"} and engine.removed == ["team/compile-cache/ccache:1"]


def test_the_tool_travels_in_a_vendor_bundle_and_counts_as_used_by_a_build(tmp_path: Path) -> None:
    """An offline machine builds from the bundle alone, the tool image too; gc --inputs keeps its .debs."""
    cache = Cache(tmp_path / "cache")
    plan = _with_a_tool_at_hand(reference_plan(tmp_path), cache, tmp_path)
    plan = dataclasses.replace(plan, stages={n: dataclasses.replace(s, context=()) for n, s in plan.stages.items()})
    use = plan.stages["runtime"].compile_cache
    assert isinstance(use, CompileCache)
    locked = lock_io.read(ROOT / "lockfiles" / "reference.lock.json")
    staging = tmp_path / "bundle"
    staging.mkdir()
    files = bundle._fill(
        staging, [plan], locked, ROOT / "lockfiles" / "reference.lock.json", SiteConfig(), cache, print
    )
    assert f"blobs/{use.tool[0].sha256}" in files["files"]
    system = locked.section(Arch.X86_64).system
    assert {d.sha256 for d in system.compile_cache} <= {d.sha256 for d in every_deb(system)}


def test_the_tool_asks_the_compiler_for_a_dependency_list_where_the_build_asks_for_none(tmp_path: Path) -> None:
    """ccache's depend mode needs one (no preprocessor run on a miss); it is written on the cache's mount
    and gone after the compile. A command line that asks for a full list, or compiles nothing, reaches
    ccache as the build wrote it; one whose list leaves out system headers (-MMD), or that may ask for
    one unseen (a response file), too, with depend mode off: its -isystem headers would go unhashed.
    The Docker tier shows the real ccache running no preprocessor."""
    plan = reference_plan(tmp_path)
    use = plan.stages["runtime"].compile_cache
    assert isinstance(use, CompileCache)
    made = compile_mounts.recipe(plan, use, "parent-toolkit")
    assert "depend_mode = true\n" in made.config
    # Prints whether depend mode is left on, then its arguments; makes the list it is given.
    ccache = tmp_path / "ccache"
    fake = '#!/bin/sh\necho "depend ${CCACHE_NODEPEND:-on}"\nfor a in "$@"; do echo "$a"; done\n'
    ccache.write_text(fake + '[ "$7" = -MF ] && : > "$8"\nexit 3\n')
    ccache.chmod(0o755)
    prefix = f"{plan.arch.loader} --library-path @LIBRARIES@ /mnt/root/usr/bin/ccache"
    assert made.run.count(prefix) == 2
    run = tmp_path / "run.sh"
    run.write_text(made.run.replace(prefix, str(ccache)).replace(cache_dir("stackbuild"), str(tmp_path / "cache")))

    def called(*args: str) -> list[str]:
        ran = subprocess.run(["sh", str(run), *args], capture_output=True, text=True, cwd=tmp_path)
        assert ran.returncode == 3, ran.stderr  # the compiler's exit status, passed on
        return ran.stdout.splitlines()

    listed = called("/usr/bin/cc", "-c", "a.c", "-o", "a.o")
    assert listed[:5] == ["depend on", "/usr/bin/cc", "-c", "a.c", "-o"] and listed[5:7] == ["a.o", "-MD"]
    temp = re.escape(str(tmp_path / "cache" / "tmp"))
    assert listed[7] == "-MF" and re.fullmatch(temp + r"/depend\.\d+\.d", listed[8])
    assert not os.listdir(tmp_path / "cache" / "tmp")  # removed after the compile
    full = (["-c", "a.c", "-MD", "-MF", "a.d"], ["-c", "a.c", "-Wp,-MD,a.d"], ["-c", "a.c", "--write-dependencies"])
    for own in (*full, ["a.o", "-o", "a"], ["--zero-stats"]):
        assert called("/usr/bin/cc", *own) == ["depend on", "/usr/bin/cc", *own]
    partial = (["-c", "a.c", "-MMD", "-MF", "a.d"], ["-c", "a.c", "-Wp,-MMD,a.d"], ["-c", "a.c", "@flags.rsp"])
    for own in partial:
        assert called("/usr/bin/cc", *own) == ["depend 1", "/usr/bin/cc", *own]
