"""The compile cache as planned (builder.plan.compile_cache): a component that builds gets a cache of
its own per architecture and toolchain, or a reason it has none; nothing of the cache is in a stage's
key or Dockerfile but the wrappers and build.sh lines that are the same with it on or off."""

from __future__ import annotations

from pathlib import Path

from pydantic import ByteSize

from builder import lock as lock_io
from builder import manifest
from builder.execute import chain
from builder.execute.chain import Request
from builder.inputs.debs import Deb
from builder.inputs.site import SiteConfig
from builder.lock.locked import LockedDeb, LockedSystem
from builder.lock.system import COMPILE_CACHE_SCOPE, STACK_SCOPE, pinned
from builder.model.arch import Arch
from builder.plan.compile_cache import WRAPPERS, CompileCache, NoCompileCache, decide
from builder.plan.plan_model import Plan
from builder.store.cache import Cache
from tests.conftest import ROOT
from tests.golden_plan import golden_plan

REFERENCE = ROOT / "stacks" / "reference.yaml"
BUILDING = ("tilelang", "tilelang-compiler", "ascend-kernel", "runtime", "harness")  # each runs build steps


def reference_plan(tmp_path: Path, arch: Arch = Arch.X86_64, site: SiteConfig | None = None) -> Plan:
    loaded, locked = manifest.load(REFERENCE), lock_io.read(ROOT / "lockfiles" / "reference.lock.json")
    request = Request(loaded, REFERENCE, locked, site or SiteConfig(), Cache(tmp_path / "cache"), arch)
    return chain.plan(request, say=lambda _: None)


def test_each_component_that_builds_has_a_cache_of_its_own_per_architecture(tmp_path: Path) -> None:
    x86, arm = reference_plan(tmp_path), reference_plan(tmp_path, Arch.AARCH64)
    uses = {name: stage.compile_cache for name, stage in x86.stages.items() if stage.compile_cache is not None}
    assert sorted(uses) == sorted(BUILDING)
    assert all(isinstance(use, CompileCache) for use in uses.values())
    ids = {name: use.cache_id for name, use in uses.items() if isinstance(use, CompileCache)}
    assert len(set(ids.values())) == len(BUILDING)
    assert all(i.startswith(f"stackbuild-ccache-{name}-x86_64-") for name, i in ids.items())
    on_arm = {n: s.compile_cache.cache_id for n, s in arm.stages.items() if isinstance(s.compile_cache, CompileCache)}
    assert not set(on_arm.values()) & set(ids.values())
    tool = next(u.tool for u in uses.values() if isinstance(u, CompileCache))
    assert {d.name for d in tool} == {"ccache", "libhiredis0.14"}  # what the locked base lacks of ccache's closure


def test_a_cache_follows_the_toolchain_and_not_the_component_source() -> None:
    """One cache per component, architecture and toolchain: the toolkit stage (with the base under it),
    the stage's own .debs and SOURCE_DATE_EPOCH; the component's source is ccache's to hash, not the id's."""
    deb = LockedDeb(
        name="ccache", version="4.7", architecture="amd64", repository="http://deb.debian.org/debian",
        path="pool/main/c/ccache/ccache_4.7_amd64.deb", sha256="a" * 64, size=1,
    )  # fmt: skip
    toolchain = {"toolkit": "1" * 64, "debs": "", "source_date_epoch": 1700000000}

    def cache_id(**changed: object) -> str:
        use = decide("ccache", (deb,), 1 << 30, "stackbuild", "kernels", Arch.X86_64, {**toolchain, **changed})
        assert isinstance(use, CompileCache)
        return use.cache_id

    base = cache_id()
    assert base == cache_id()
    assert len({base, cache_id(toolkit="2" * 64), cache_id(debs="d" * 64), cache_id(source_date_epoch=1)}) == 4


def test_without_a_cache_each_component_says_why(tmp_path: Path) -> None:
    golden = golden_plan()  # its manifest names none
    assert {type(s.compile_cache) for s in golden.stages.values() if s.kind == "component"} == {NoCompileCache}
    reason = next(s.compile_cache for s in golden.stages.values() if isinstance(s.compile_cache, NoCompileCache))
    assert reason == NoCompileCache("the manifest names no compile cache (compile_cache: ccache)")
    assert decide("ccache", (), 1, "p", "c", Arch.X86_64, {}) == NoCompileCache(
        "the lock has no ccache .debs for x86_64: relock to add them"
    )
    sized_out = (
        reference_plan(tmp_path, site=SiteConfig(compile_cache_size=ByteSize(0))).stages["runtime"].compile_cache
    )
    assert sized_out == NoCompileCache("the site configuration's compile_cache_size is 0")


def test_whether_a_cache_is_used_changes_no_stage_key_and_no_dockerfile(tmp_path: Path) -> None:
    used, unused = reference_plan(tmp_path), reference_plan(tmp_path, site=SiteConfig(compile_cache_size=ByteSize(0)))
    assert {n: (s.key, s.dockerfile) for n, s in used.stages.items()} == {
        n: (s.key, s.dockerfile) for n, s in unused.stages.items()
    }


def test_only_a_stack_with_a_cache_has_the_compiler_wrappers(tmp_path: Path) -> None:
    reference, golden = reference_plan(tmp_path).stages, golden_plan().stages
    assert f"mkdir -p {WRAPPERS} && cp /mnt/* {WRAPPERS}/" in reference["toolkit"].dockerfile
    wrappers = {path for path, _ in reference["toolkit"].files if path.startswith("compilers/")}
    assert wrappers == {f"compilers/{n}" for n in ("cc", "c++", "gcc", "g++")}
    assert "compilers" not in golden["toolkit"].dockerfile
    assert not any(path.startswith("compilers/") for path, _ in golden["toolkit"].files)
    build = dict(reference["runtime"].files)["steps/build.sh"]
    assert f"export PATH={WRAPPERS}:" in build and "compile cache: %d hits" in build
    # A cached object leaves the temporary directory as a compile does (found by the Docker tier: /tmp in the layer).
    assert 'touch -c -- "${TMPDIR:-/tmp}"' in build
    assert "compile cache" not in dict(golden["kernels"].files)["steps/build.sh"]


def test_the_lock_pins_the_tool_beside_the_stack_and_writes_nothing_without_one() -> None:
    def deb(name: str, sha: str) -> Deb:
        return Deb(name, "1", "amd64", "http://deb.debian.org/debian", f"pool/{name}_1_amd64.deb", sha * 64, 1)

    gcc = deb("gcc", "1")
    resolved = {STACK_SCOPE: [gcc], COMPILE_CACHE_SCOPE: [gcc, deb("ccache", "2"), deb("hiredis", "3")]}
    system = pinned(resolved, None)
    assert [d.name for d in system.compile_cache] == ["ccache", "hiredis"]  # the stack's gcc is in the base already
    assert system.components == {}
    assert "compile_cache" not in LockedSystem(stack=system.stack).model_dump(mode="json")
    assert "compile_cache" in system.model_dump(mode="json")
