"""The compile cache of component builds, as planned: whether a component's stage uses it, which
cache (one per component, architecture and toolchain), and the files that make it work.

Nothing here is in a stage key but what is the same with the cache on or off: the compiler wrappers
the toolkit stage installs (templates/compiler.sh: they run the compiler directly when no cache is
mounted) and the lines of build.sh that put them first on PATH. The cache itself - the ccache tool
unpacked from the lock's .debs and the BuildKit cache mount - reaches a build only as `RUN --mount`
flags added to its build step when it is built (builder.execute.compile_mounts), which BuildKit
records in no image: its history keeps the command, not the mounts.

ccache makes a cached object the compiler's own output for the same input: its hash covers the
compiler's content (compiler_check = content), the command line, the source and every file the
compiler's dependency list names (depend_mode: no preprocessor run on a miss), and the working
directory where debug information names it (hash_dir). Compiles whose list would leave headers out
(-MMD: -isystem ones) or cannot be seen (response files) hash the preprocessed input instead
(templates/compile-cache-run.sh.j2). Each cache is also keyed by the toolkit stage (the base and
CANN below every component's compiler), the stage's own .debs (a compiler a component installs) and
SOURCE_DATE_EPOCH (what __DATE__ gives). What depend mode costs, never a wrong object: an edit that
changes no preprocessed byte (a comment) misses; a file using __TIME__ always compiles (__DATE__:
each day); with ccache before 4.7 (Ubuntu 22.04's 4.5.1), a file changed in the second its compile
starts is not recorded, so it compiles next time too. CANN's device compiler (bisheng, clang-based)
is not wrapped, so device compiles are never cached: ccache has no entry for the Ascend C language
(ccache PR #1739, "Support Ascend C language", open), and clang writes the dependency list of a
host-and-device compile for the host side alone (by design for HIP and CUDA, llvm-project #176072;
inferred for bisheng), so depend mode could take a header only the device side includes for
unchanged. What it shares with ccache's direct mode (ccache's manual, "Caveats"): a header newly
created earlier on the include path than the one a cached object was compiled with is not noticed;
`verify-reproducible` builds its second build without the cache."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from builder.lock.locked import LockedDeb
from builder.model.arch import Arch
from builder.model.canonical import digest

WRAPPERS = "/opt/stackbuild/compilers"  # in the toolkit stage, first on PATH in every component build
COMPILERS = ("cc", "c++", "gcc", "g++")  # the names builds call compilers by (CMake's and make's defaults)
# Where the tool image is mounted: a directory every base has, so no mount point is made in a layer.
TOOL_MOUNT = "/mnt"
TOOL_ENTRY = f"{TOOL_MOUNT}/stackbuild-compile-cache"  # the wrappers use the cache when this is there
WRAPPER = (resources.files("builder.plan") / "templates" / "compiler.sh").read_text()


@dataclass(frozen=True)
class CompileCache:
    """A component stage's compile cache: the BuildKit cache mount's id and the tool's .debs."""

    cache_id: str
    tool: tuple[LockedDeb, ...]
    max_size: int  # bytes: ccache evicts the least recently used beyond it


@dataclass(frozen=True)
class NoCompileCache:
    """Why a component stage compiles without the cache (plan says so)."""

    reason: str


CompileCacheUse = CompileCache | NoCompileCache


def cache_dir(image_prefix: str) -> str:
    """Where a build's cache is mounted: an empty directory of the tool image, named by the prefix so
    that the engine's list of cache mounts tells one prefix's caches from another's (gc, plan)."""
    return f"{TOOL_MOUNT}/cache-{image_prefix}"


def wrapper_files() -> tuple[tuple[str, str], ...]:
    """The toolkit stage's compiler wrappers, as (context path, text): one script under each name."""
    return tuple((f"compilers/{name}", WRAPPER) for name in COMPILERS)


def decide(
    named: str | None,
    tool: tuple[LockedDeb, ...],
    max_size: int,
    image_prefix: str,
    component: str,
    arch: Arch,
    toolchain: dict[str, object],
) -> CompileCacheUse:
    """Whether the component's stage uses the cache the manifest names (named) with the lock's tool
    .debs; toolchain: what its compiler's output depends on beyond the inputs ccache hashes."""
    if named is None:
        return NoCompileCache("the manifest names no compile cache (compile_cache: ccache)")
    if not tool:
        return NoCompileCache(f"the lock has no {named} .debs for {arch}: relock to add them")
    if max_size <= 0:
        return NoCompileCache("the site configuration's compile_cache_size is 0")
    key = digest({"tool": [d.sha256 for d in tool], **toolchain})[:16]
    return CompileCache(f"{image_prefix}-{named}-{component}-{arch}-{key}", tool, max_size)
