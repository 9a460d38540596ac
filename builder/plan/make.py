"""The plan: the stage graph of one architecture, rendered and keyed, from located inputs."""

from __future__ import annotations

from builder.inputs import base_kinds
from builder.inputs.contexts import BytesItem, FileItem
from builder.lock import io as lock_io
from builder.manifest.graph import transitive_deps
from builder.model.canonical import digest
from builder.model.layout import stack_dir, toolkit_layout
from builder.model.names import repository
from builder.plan import render
from builder.plan.labels import FINAL_SUFFIXES, LOCK_IN_IMAGE, as_built, image_labels, release_name
from builder.plan.plan_model import (
    ContextInput,
    EnvCapture,
    Plan,
    Stage,
    StageInputs,
    StageKind,
    parent_arg,
    sha256_text,
)
from builder.plan.prepare import Inputs, Located
from builder.plan.reads import parent_reads
from builder.verify import probes as probe_specs
from builder.verify.probes import ProbeSpec

NO_CONTEXT = Located((), ContextInput("", ""))
SCRIPT_MODE, PLAIN_MODE = 0o755, 0o644  # a stage's own files: scripts, or plain data (add's plain)


class _Graph:
    """Stages added in build order; each one's key is known once it is added."""

    def __init__(self, platform: str) -> None:
        self.platform = platform
        self.stages: dict[str, Stage] = {}

    def image(self, name: str) -> str:
        """How a Dockerfile names a parent: the stage its parents' header declares (see add)."""
        assert name in self.stages, name
        return name

    def add(
        self,
        name: str,
        kind: StageKind,
        parents: tuple[str, ...],
        dockerfile: str,
        located: Located = NO_CONTEXT,
        probes: tuple[ProbeSpec, ...] = (),
        workdir: str = "/",
        files: tuple[tuple[str, str], ...] = (),
        network: bool = False,
        env_capture: EnvCapture | None = None,
        source: ContextInput | None = None,
        plain: frozenset[str] = frozenset(),
    ) -> None:
        files = files + (env_capture.files() if env_capture else ())
        dockerfile = _parents_header(parents, self.stages) + dockerfile
        # The key covers each file's text, and which are written plain (not executable): all of its content.
        named = {"Dockerfile": dockerfile, **dict(files), **({"plain files": sorted(plain)} if plain else {})}
        definition = digest(named) if files else sha256_text(dockerfile)
        inputs = StageInputs(
            dockerfile=definition,
            context=located.content,
            parents=tuple((p, self.stages[p].key) for p in parents),
            platform=self.platform,
            probes=digest({"probes": list(probes), "runner": probe_specs.RUNNER_SHA256}) if probes else "",
            network=network,
        )
        items = (
            *located.items,
            *(BytesItem(path, text.encode(), PLAIN_MODE if path in plain else SCRIPT_MODE) for path, text in files),
        )
        reads = parent_reads(dockerfile, parents)
        self.stages[name] = Stage(
            name,
            kind,
            parents,
            dockerfile,
            items,
            inputs,
            files,
            probes,
            workdir,
            env_capture,
            source=source,
            reads=reads,
        )


def _parents_header(parents: tuple[str, ...], stages: dict[str, Stage]) -> str:
    """Each parent as a named stage whose image is a build argument: the stage tag by default, the
    parent's image as built or normalised when its children build while it is normalised and probed."""
    if not parents:
        return ""
    lines = ["# stackbuild: parent stages (each build argument names the parent's image)."]
    lines += [f"ARG {parent_arg(p)}={stages[p].tag()}" for p in parents]
    lines += [f"FROM ${{{parent_arg(p)}}} AS {p}" for p in parents]
    return "\n".join(lines) + "\n"


def files_of(located: Located | None) -> list[str]:
    """The .deb file names of an install point, in install order."""
    return (
        [item.arcname.removeprefix("debs/") for item in located.items if isinstance(item, FileItem)] if located else []
    )


def joined(first: Located, more: Located | None) -> Located:
    """A stage's context with .debs or wheels added (the same as before when there are none)."""
    if more is None:
        return first
    content = ContextInput(
        first.content.what, digest({"context": first.content.sha256, more.content.what: more.content.sha256})
    )
    return Located((*first.items, *more.items), content)


DIRTY = "-dirty"


def repository_for(stack: str) -> str:
    return repository(stack.lower())


def final_tags(inputs: Inputs, dirty: bool) -> dict[str, str]:
    """Tags of the final images, the same on every host: the architecture is always in the tag, and
    -dirty ends the tags of images built from path sources that differ from the lock (their carried
    lock says which trees; the mark is in the tags only, so the image bytes are what the trees give)."""
    m, arch = inputs.request.manifest, inputs.request.arch
    name = release_name(m)
    repository = repository_for(m.name)
    mark = DIRTY if dirty else ""
    return {final: f"{repository}:{name}{suffix}-{arch}{mark}" for final, suffix in FINAL_SUFFIXES.items()}


def make_plan(inputs: Inputs) -> Plan:
    request = inputs.request
    manifest, lock, arch = request.manifest, request.lock, request.arch
    graph = _Graph(arch.platform)
    python = probe_specs.python_probe(manifest.platform.python)
    debs = inputs.debs
    for flavor in ("devel", "runtime"):
        name = f"base-{flavor}"
        dockerfile = render.base(flavor, lock, files_of(debs.get(name)))
        located = joined(inputs.bases[flavor], debs.get(name))
        hosts = (("etc-hosts", ""),)  # /etc/hosts: see base.Dockerfile.j2
        graph.add(name, "base", (), dockerfile, located, (python,), files=hosts, plain=frozenset({"etc-hosts"}))
    section = lock.section(arch)
    toolkit_file = render.toolkit(lock, graph.image("base-devel"), section.packages)
    toolkit_probes = probe_specs.toolkit_probes(toolkit_layout(lock.toolkit.version))
    toolkit_env = render.environment("toolkit", lock)
    graph.add(
        "toolkit", "toolkit", ("base-devel",), toolkit_file, inputs.packages, toolkit_probes, env_capture=toolkit_env
    )
    needs = transitive_deps({cid: lock.component(cid).depends_on for cid in lock.order})
    for cid in lock.order:
        deps = needs[cid]
        dep_images = [(d, graph.image(d)) for d in deps]
        dockerfile = render.component(manifest, lock, cid, graph.image("toolkit"), dep_images, files_of(debs.get(cid)))
        probes = probe_specs.component_probes(manifest.component(cid))
        files = render.component_files(manifest, cid, deps)
        network = manifest.component(cid).network
        scripts = render.component_scripts(manifest, [*deps, cid])
        graph.add(
            cid,
            "component",
            ("toolkit", *deps),
            dockerfile,
            joined(joined(inputs.sources[cid], debs.get(cid)), inputs.wheels.get(cid)),
            probes,
            stack_dir(cid),
            files,
            network,
            env_capture=render.environment(cid, lock, components=scripts) if scripts else None,
            source=inputs.sources[cid].source,
        )
    built = [(cid, graph.image(cid)) for cid in lock.order]
    # The lock rides in both final images, beside labels naming what they hold.
    trees = {cid: located.source.sha256 for cid, located in inputs.sources.items()}
    carried = as_built(lock, trees)
    lock_file = (("stack.lock.json", lock_io.text(carried)),)
    about = render.about(image_labels(manifest, carried, arch, devel=True), "stack.lock.json", LOCK_IN_IMAGE)
    devel_file = render.devel(manifest, graph.image("toolkit"), built, files_of(debs.get("devel-image")), about)
    devel_parents = ("toolkit", *lock.order)
    every_module = [m for cid in lock.order for m in manifest.component(cid).imports]
    devel_probes = probe_specs.imports_probe(every_module)
    devel_scripts = render.component_scripts(manifest, lock.order)
    graph.add(
        "devel-image",
        "devel",
        devel_parents,
        devel_file,
        debs.get("devel-image", NO_CONTEXT),
        devel_probes,
        files=lock_file,
        env_capture=render.environment("devel-image", lock, components=devel_scripts) if devel_scripts else None,
    )
    about = render.about(image_labels(manifest, carried, arch, devel=False), "stack.lock.json", LOCK_IN_IMAGE)
    # CANN's runtime subset installed on the devel base from the packages, or the toolkit stage's tree.
    installs_cann = render.runtime_installs(lock, section.packages)
    cann_parent, cann_context = ("base-devel", inputs.packages) if installs_cann else ("toolkit", NO_CONTEXT)
    images = render.RuntimeImages(graph.image("base-runtime"), graph.image("base-devel"), graph.image("toolkit"))
    runtime_file = render.runtime(manifest, lock, images, section.packages if installs_cann else (), built, about)
    # Only the variables of components that reach the runtime image (the others name what it lacks).
    in_runtime = [cid for cid in lock.order if manifest.component(cid).reaches_runtime]
    runtime_env = render.environment(
        "runtime-image",
        lock,
        render.component_env(manifest, in_runtime),
        render.component_scripts(manifest, in_runtime, runtime=True),
    )
    runtime_parents = ("base-runtime", cann_parent, *lock.order)
    runtime_modules = [
        m for cid in lock.order if manifest.component(cid).reaches_runtime for m in manifest.component(cid).imports
    ]
    runtime_probes = (*probe_specs.imports_probe(runtime_modules), probe_specs.closure_probe())
    graph.add(
        "runtime-image",
        "runtime",
        runtime_parents,
        runtime_file,
        cann_context,
        probes=runtime_probes,
        files=lock_file,
        env_capture=runtime_env,
    )
    installs = {c.id: tuple(i.path for i in c.installs) for c in manifest.components if c.installs}
    return Plan(
        manifest.name,
        arch,
        repository_for(manifest.name),
        graph.stages,
        inputs.drift,
        final_tags(inputs, dirty=carried is not lock),
        lock.base.source_date_epoch,
        installs=installs,
        needs={cid: frozenset(deps) for cid, deps in needs.items()},
        base_image=base_kinds.kind_of(lock.base).pulled(lock.base),
    )
