"""The compile cache at build time: the tool image a component build mounts (ccache unpacked from the
lock's .debs, made once per engine), and the build step's mounts, added to the Dockerfile that is
built and to none that is keyed (builder.plan.compile_cache says why the images are the same)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from builder.engine import BuildEngine, BuildSpec, CacheMount
from builder.inputs.contexts import BytesItem, FileItem, write_context
from builder.model.canonical import digest
from builder.model.names import repository
from builder.plan.compile_cache import TOOL_MOUNT, CompileCache, cache_dir
from builder.plan.plan_model import Plan, Stage
from builder.plan.templating import templates
from builder.store.cache import Cache

TOOLS = "compile-cache"  # <prefix>/compile-cache/<tool>:<key>: the tool images
# A component's build step, as templates/component.Dockerfile.j2 writes it (with network or without).
BUILD_STEP = re.compile(r'^RUN (\["/bin/bash", "[^"]+/build\.sh"(?:, "with-network")?\])$', re.M)


@dataclass(frozen=True)
class ToolRecipe:
    """What makes a tool image: its Dockerfile and files; its tag names what they are."""

    tag: str
    dockerfile: str
    config: str
    run: str


def recipe(plan: Plan, use: CompileCache, base_image: str) -> ToolRecipe:
    """The tool image for use's .debs (unpacked in base_image, which has dpkg-deb: the toolkit's)."""
    prefix = plan.stages["toolkit"].image_prefix
    # ccache reads a size with a suffix ("5G" is 5 * 10^9 bytes; a plain number is gigabytes): kibibytes.
    config = "# stackbuild's compile cache (builder/plan/compile_cache.py)\n"
    config += f"max_size = {max(1, use.max_size // 1024)}Ki\ncompiler_check = content\nhash_dir = true\n"
    config += "depend_mode = true\n"  # no preprocessor run on a miss (templates/compile-cache-run.sh.j2)
    run = templates.get_template("compile-cache-run.sh.j2").render(loader=plan.arch.loader, cache_dir=cache_dir(prefix))
    values = {"cache_dir": cache_dir(prefix), "cache_name": cache_dir(prefix).removeprefix(f"{TOOL_MOUNT}/")}
    dockerfile = templates.get_template("compile-cache-tool.Dockerfile.j2").render(base_image=base_image, **values)
    # The unpacking base is not in the key: dpkg-deb -x gives the same files on any.
    made_by = dockerfile.replace(base_image, "")
    debs = [d.sha256 for d in use.tool]
    key = digest({"debs": debs, "config": config, "run": run, "dockerfile": made_by, "arch": plan.arch.value})
    return ToolRecipe(f"{repository(prefix, TOOLS, 'ccache')}:{key}", dockerfile, config, run)


def tool_image(
    engine: BuildEngine, cache: Cache, plan: Plan, use: CompileCache, base_image: str, log: Callable[[str], None]
) -> str:
    """The tool image's tag on engine, made first if it has none (once, whatever builds at once)."""
    made = recipe(plan, use, base_image)
    with cache.locks.exclusive(f"compile-cache-tool-{made.tag.rpartition(':')[2]}"):
        if engine.image_id(made.tag) is not None:
            return made.tag
        log(f"# making the compile cache's tool image {made.tag}")
        items: list[FileItem | BytesItem] = [
            *(FileItem(f"debs/{d.file}", _blob(cache, d.sha256)) for d in use.tool),
            BytesItem("ccache.conf", made.config.encode(), 0o644),
            BytesItem("run.sh", made.run.encode(), 0o755),
        ]
        with cache.scratch.temp_dir() as context:
            write_context(context, made.dockerfile, items, cache)
            labels = {"org.stackbuild.compile-cache-tool": made.tag}
            image_id = engine.build(context, log, BuildSpec(labels, plan.arch))
        engine.tag(image_id, made.tag)
        return made.tag


def mounted(stage: Stage, use: CompileCache, tool: str) -> str:
    """stage's Dockerfile with its build step mounting the tool (read only, on TOOL_MOUNT) and its cache
    (BuildKit keeps it between builds; one build at a time uses it, so its statistics are that build's)."""
    prefix = stage.image_prefix
    mounts = (
        f"--mount=type=bind,from={tool},target={TOOL_MOUNT} "
        f"--mount=type=cache,id={use.cache_id},target={cache_dir(prefix)},sharing=locked"
    )
    dockerfile, found = BUILD_STEP.subn(lambda step: f"RUN {mounts} {step.group(1)}", stage.dockerfile)
    assert found == 1, f"{stage.name}: {found} build steps in its Dockerfile"
    return dockerfile


def cache_mounts(engine: BuildEngine, image_prefix: str) -> dict[str, list[CacheMount]]:
    """The engine's compile caches under image_prefix, by the component whose build step made them."""
    target = f"cached mount {cache_dir(image_prefix)} from exec /bin/bash "
    found: dict[str, list[CacheMount]] = {}
    for mount in engine.cache_mounts():
        if mount.description.startswith(target):
            script = mount.description.removeprefix(target).split(" ")[0]
            component = script.removesuffix("/build.sh").rpartition("/")[2]
            found.setdefault(component, []).append(mount)
    return found


def _blob(cache: Cache, sha256: str) -> Callable[[], Path]:
    return lambda: cache.blob(sha256)


@dataclass(frozen=True)
class CacheState:
    """A component's compile cache as `plan` shows it: used or not (and why), and what the engine keeps of it."""

    component: str
    used: bool
    detail: str  # the cache's id, or why the build compiles without one
    size: int  # bytes the engine keeps in this component's caches under the prefix (every toolchain's)


def states(plan: Plan, engine: BuildEngine) -> list[CacheState]:
    """Each component stage's compile cache on engine."""
    kept = cache_mounts(engine, plan.stages["toolkit"].image_prefix)
    found = []
    for stage in plan.order():
        use, size = stage.compile_cache, sum(m.size for m in kept.get(stage.name, []))
        if isinstance(use, CompileCache) and not engine.mounts():
            found.append(CacheState(stage.name, False, "the classic builder has no build-time mounts", size))
        elif isinstance(use, CompileCache):
            found.append(CacheState(stage.name, True, use.cache_id, size))
        elif use is not None:
            found.append(CacheState(stage.name, False, use.reason, size))
    return found
