"""What a kind of stage is (the `StageContributor` Protocol) and what the kinds share: the graph they
add their stages to, and what every kind reads (`Planning`). `make.make_plan` calls each kind in
build order (`make.STAGE_KINDS`) and names no stage itself.

Adding a kind: a class meeting `StageContributor` (beside its like in `platform_stages`,
`component_stages` or `final_stages`, or in a module of its own), its place in `make.STAGE_KINDS`
after the kinds whose stages are its parents, and its name in `plan_model.StageKind` (execution
tells kinds apart where it normalises: docs/architecture.md, "Where new things go")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from builder.inputs.contexts import BytesItem, FileItem
from builder.lock.locked import Lock
from builder.manifest.graph import transitive_deps
from builder.model.canonical import digest
from builder.plan.compile_cache import CompileCacheUse
from builder.plan.labels import as_built
from builder.plan.plan_model import ContextInput, EnvCapture, Stage, StageInputs, StageKind, parent_arg, sha256_text
from builder.plan.prepare import Inputs, Located
from builder.plan.reads import parent_reads
from builder.verify import probes as probe_specs
from builder.verify.probes import ProbeSpec

NO_CONTEXT = Located((), ContextInput("", ""))
SCRIPT_MODE, PLAIN_MODE = 0o755, 0o644  # a stage's own files: scripts, or plain data (add's plain)


@dataclass(frozen=True)
class Planning:
    """What every kind reads, worked out once before any stage is added: the located inputs, each
    component's transitive dependencies (its parents, and the plan's needs), and the lock the final
    images carry (the final tags say whether it differs from the lock)."""

    inputs: Inputs
    needs: Mapping[str, Sequence[str]]
    carried: Lock

    @classmethod
    def of(cls, inputs: Inputs) -> Planning:
        lock = inputs.request.lock
        needs = transitive_deps({cid: lock.component(cid).depends_on for cid in lock.order})
        trees = {cid: located.source.sha256 for cid, located in inputs.sources.items()}
        return cls(inputs, needs, as_built(lock, trees))

    @property
    def lock(self) -> Lock:
        return self.inputs.request.lock


class StageGraph:
    """Stages added in build order; each one's key is known once it is added."""

    def __init__(self, platform: str, image_prefix: str) -> None:
        self.platform = platform
        self.image_prefix = image_prefix
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
        compile_cache: CompileCacheUse | None = None,
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
            image_prefix=self.image_prefix,
            compile_cache=compile_cache,
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


class StageContributor(Protocol):
    """A kind of stage (the bases, the toolkit, the components, the devel and the runtime image: the
    kinds of plan_model.StageKind): its one hook adds its stages to the graph, whose stages so far are
    those of the kinds before it, its parents among them (graph.image names one).

    Environment capture is no kind of its own, as it adds no stage: a stage's environment set by
    scripts (the toolkit's, a component's env_scripts) is only known once the stage is built, so the
    kind adding that stage gives its EnvCapture with it (StageGraph.add's env_capture, made by
    render.environment). The capture's files are the stage's, covered by its key, and the engine
    applies it to that stage's image (builder.execute.environment)."""

    def add_stages(self, planning: Planning, graph: StageGraph) -> None: ...


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
