"""The final image kinds: the devel image and the runtime image, each carrying the lock as built
beside labels naming what it holds."""

from __future__ import annotations

from builder.lock import io as lock_io
from builder.plan import render
from builder.plan.labels import LOCK_IN_IMAGE, image_labels
from builder.plan.stage_kinds import NO_CONTEXT, Planning, StageGraph, files_of
from builder.verify import probes as probe_specs

CARRIED = "stack.lock.json"  # the carried lock's file in the stage's context


def _about(planning: Planning, devel: bool) -> str:
    """The image's labels and its carried lock, as Dockerfile lines."""
    request = planning.inputs.request
    labels = image_labels(request.manifest, planning.carried, request.arch, devel=devel)
    return render.about(labels, CARRIED, LOCK_IN_IMAGE)


def _built(planning: Planning, graph: StageGraph) -> list[tuple[str, str]]:
    """Every component stage, in the lock's order, as the final images' Dockerfiles name it."""
    return [(cid, graph.image(cid)) for cid in planning.lock.order]


class DevelImage:
    """The toolkit with every component: the devel image."""

    def add_stages(self, planning: Planning, graph: StageGraph) -> None:
        inputs, lock = planning.inputs, planning.lock
        manifest, debs = inputs.request.manifest, inputs.debs
        about = _about(planning, devel=True)
        dockerfile = render.devel(
            manifest,
            graph.image("toolkit"),
            _built(planning, graph),
            lock.base.source_date_epoch,
            files_of(debs.get("devel-image")),
            about,
        )
        every_module = [m for cid in lock.order for m in manifest.component(cid).imports]
        scripts = render.component_scripts(manifest, lock.order)
        graph.add(
            "devel-image",
            "devel",
            ("toolkit", *lock.order),
            dockerfile,
            debs.get("devel-image", NO_CONTEXT),
            probe_specs.imports_probe(every_module),
            files=((CARRIED, lock_io.text(planning.carried)),),
            env_capture=render.environment("devel-image", lock, components=scripts) if scripts else None,
        )


class RuntimeImage:
    """The runtime base with CANN's runtime subset and what reaches the runtime of each component."""

    def add_stages(self, planning: Planning, graph: StageGraph) -> None:
        inputs, lock = planning.inputs, planning.lock
        manifest = inputs.request.manifest
        packages = lock.section(inputs.request.arch).packages
        # CANN's runtime subset installed on the devel base from the packages, or the toolkit stage's tree.
        installs_cann = render.runtime_installs(lock, packages)
        cann_parent, cann_context = ("base-devel", inputs.packages) if installs_cann else ("toolkit", NO_CONTEXT)
        images = render.RuntimeImages(graph.image("base-runtime"), graph.image("base-devel"), graph.image("toolkit"))
        about = _about(planning, devel=False)
        built = _built(planning, graph)
        dockerfile = render.runtime(manifest, lock, images, packages if installs_cann else (), built, about)
        # Only the variables of components that reach the runtime image (the others name what it lacks).
        in_runtime = [cid for cid in lock.order if manifest.component(cid).reaches_runtime]
        env = render.environment(
            "runtime-image",
            lock,
            render.component_env(manifest, in_runtime),
            render.component_scripts(manifest, in_runtime, runtime=True),
        )
        modules = [m for cid in in_runtime for m in manifest.component(cid).imports]
        graph.add(
            "runtime-image",
            "runtime",
            ("base-runtime", cann_parent, *lock.order),
            dockerfile,
            cann_context,
            probes=(*probe_specs.imports_probe(modules), probe_specs.closure_probe()),
            files=((CARRIED, lock_io.text(planning.carried)),),
            env_capture=env,
        )
