"""The component stage kind: one stage per component, in the lock's order."""

from __future__ import annotations

from builder.model.layout import stack_dir
from builder.plan import compile_cache, render
from builder.plan.compile_cache import CompileCacheUse
from builder.plan.stage_kinds import Planning, StageGraph, files_of, joined
from builder.verify import probes as probe_specs


class ComponentStages:
    """Each component built on the toolkit, taking what the components it needs installed (they are
    its parents, so each is added before it)."""

    def add_stages(self, planning: Planning, graph: StageGraph) -> None:
        inputs, lock = planning.inputs, planning.lock
        manifest, debs = inputs.request.manifest, inputs.debs
        for cid in lock.order:
            deps = planning.needs[cid]
            dep_images = [(d, graph.image(d)) for d in deps]
            dockerfile = render.component(
                manifest, lock, cid, graph.image("toolkit"), dep_images, files_of(debs.get(cid))
            )
            probes = probe_specs.component_probes(manifest.component(cid))
            files = render.component_files(manifest, cid, deps)
            network = manifest.component(cid).network
            scripts = render.component_scripts(manifest, [*deps, cid])
            located = joined(joined(inputs.sources[cid], debs.get(cid)), inputs.wheels.get(cid))
            graph.add(
                cid,
                "component",
                ("toolkit", *deps),
                dockerfile,
                located,
                probes,
                stack_dir(cid),
                files,
                network,
                env_capture=render.environment(cid, lock, components=scripts) if scripts else None,
                source=inputs.sources[cid].source,
                compile_cache=_compile_cache(planning, graph, cid) if files else None,
            )


def _compile_cache(planning: Planning, graph: StageGraph, cid: str) -> CompileCacheUse:
    """The component's cache: one per component, architecture and toolchain (the toolkit stage, with
    the base below it; the component's own .debs; the lock's SOURCE_DATE_EPOCH, which __DATE__ gives)."""
    request, lock = planning.inputs.request, planning.lock
    own_debs = planning.inputs.debs.get(cid)
    toolchain = {
        "toolkit": graph.stages["toolkit"].key,
        "debs": own_debs.content.sha256 if own_debs else "",
        "source_date_epoch": lock.base.source_date_epoch,
    }
    tool = planning.inputs.compile_cache_tool
    size = int(request.site.compile_cache_size)
    return compile_cache.decide(
        request.manifest.compile_cache, tool, size, request.image_prefix, cid, request.arch, toolchain
    )
