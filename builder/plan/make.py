"""The plan: the stage graph of one architecture, rendered and keyed, from located inputs. Each kind
of stage adds its own (`stage_kinds.StageContributor`); this module orders the kinds and names the
final images."""

from __future__ import annotations

from builder.inputs import base_kinds
from builder.model.names import repository
from builder.plan.component_stages import ComponentStages
from builder.plan.final_stages import DevelImage, RuntimeImage
from builder.plan.labels import FINAL_SUFFIXES, release_name
from builder.plan.plan_model import Plan
from builder.plan.platform_stages import BaseStages, ToolkitStage
from builder.plan.prepare import Inputs
from builder.plan.stage_kinds import Planning, StageContributor, StageGraph

# In build order: a kind's parents are stages of the kinds before it, and the plan's stages keep this order.
STAGE_KINDS: tuple[StageContributor, ...] = (
    BaseStages(),
    ToolkitStage(),
    ComponentStages(),
    DevelImage(),
    RuntimeImage(),
)

DIRTY = "-dirty"


def repository_for(image_prefix: str, stack: str) -> str:
    return repository(image_prefix, stack.lower())


def final_tags(inputs: Inputs, dirty: bool) -> dict[str, str]:
    """Tags of the final images, the same on every host: the architecture is always in the tag, and
    -dirty ends the tags of images built from path sources that differ from the lock (their carried
    lock says which trees; the mark is in the tags only, so the image bytes are what the trees give)."""
    m, arch = inputs.request.manifest, inputs.request.arch
    name = release_name(m)
    repository = repository_for(inputs.request.image_prefix, m.name)
    mark = DIRTY if dirty else ""
    return {final: f"{repository}:{name}{suffix}-{arch}{mark}" for final, suffix in FINAL_SUFFIXES.items()}


def make_plan(inputs: Inputs) -> Plan:
    manifest, lock = inputs.request.manifest, inputs.request.lock
    planning = Planning.of(inputs)
    graph = StageGraph(inputs.request.arch.platform, inputs.request.image_prefix)
    for kind in STAGE_KINDS:
        kind.add_stages(planning, graph)
    return Plan(
        manifest.name,
        inputs.request.arch,
        repository_for(inputs.request.image_prefix, manifest.name),
        graph.stages,
        inputs.drift,
        final_tags(inputs, dirty=planning.carried is not lock),
        lock.base.source_date_epoch,
        installs={c.id: tuple(i.path for i in c.installs) for c in manifest.components if c.installs},
        needs={cid: frozenset(deps) for cid, deps in planning.needs.items()},
        base_image=base_kinds.kind_of(lock.base).pinned_image(lock.base),
    )
