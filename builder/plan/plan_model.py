"""Stages and plans: frozen values, each stage's key computed in one function from its inputs."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Literal

from builder.inputs.contexts import ContextItem
from builder.model.arch import Arch
from builder.model.canonical import digest
from builder.model.names import DEFAULT_PREFIX, repository
from builder.plan.compile_cache import CompileCacheUse
from builder.plan.parsed import instructions
from builder.plan.reads import EVERYTHING, Reads, sees
from builder.verify.probes import ProbeSpec

StageKind = Literal["base", "toolkit", "component", "devel", "runtime"]
# The repositories under the image prefix (builder.model.names): <prefix>/stage/<stage>:<key>, ...
STAGES = "stage"
# Where a stage's image waits for its probes: its children may build from it meanwhile, and are tagged
# only once it is (a killed build leaves at most this name behind, never a stage tag).
PENDING = "pending"
# A failed stage's last state, made by `stackbuild shell` to debug it (gc removes it once the stage moves on).
FAILED = "failed"
FINALS = ("devel-image", "runtime-image")


@dataclass(frozen=True)
class ContextInput:
    """What a stage's context holds, as a content hash and what kind of thing it is."""

    what: str  # "source tree", "git main", "base tarball", "packages", "image", "" (none)
    sha256: str


@dataclass(frozen=True)
class StageInputs:
    """Everything that decides a stage's result; its key is the digest of these."""

    dockerfile: str  # sha256 of the rendered Dockerfile and the scripts beside it
    context: ContextInput
    parents: tuple[tuple[str, str], ...]  # (stage, key)
    platform: str
    probes: str  # sha256 of the probe specs and of the probe runner: new checks mean a new key
    network: bool = False  # the build may reach the network

    def as_record(self) -> dict[str, object]:
        """The inputs as the key hashes them: defaults left out, so a new field keeps old keys."""
        return {k: v for k, v in asdict(self).items() if not (k == "network" and v is False)}


def stage_key(inputs: StageInputs) -> str:
    return digest(inputs.as_record())


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# Where a EnvCapture's Dockerfile takes the ENV read from the built image.
BAKED_ENV = "# stackbuild: ENV read from the built image"


@dataclass(frozen=True)
class EnvCapture:
    """A stage whose environment is only known once it is built (the toolkit's scripts set it): the
    script that reads it in the built image (env-capture.sh.j2) and the Dockerfile that adds it."""

    capture: str
    dockerfile: str  # FROM ${BUILT_IMAGE}, BAKED_ENV where the ENV goes

    def files(self) -> tuple[tuple[str, str], ...]:
        """Both as files of the stage (its key covers them)."""
        return (("env/capture.sh", self.capture), ("env/Dockerfile", self.dockerfile))

    def changes(self, env: Mapping[str, str]) -> list[str]:
        """dockerfile_with(env)'s instructions after its FROM, as the engine applies them to the
        built image's config (LayerStore.configure)."""
        found = instructions(self.dockerfile_with(env))
        start = next(n for n, instruction in enumerate(found) if instruction.name == "FROM") + 1
        return [instruction.content for instruction in found[start:]]

    def dockerfile_with(self, env: Mapping[str, str]) -> str:
        """The Dockerfile with env as one ENV instruction of literal values (nothing expanded)."""
        if not env:
            return self.dockerfile.replace(BAKED_ENV, "# (the scripts set nothing)")
        pairs = [f'{name}="{_literal(value)}"' for name, value in sorted(env.items())]
        return self.dockerfile.replace(BAKED_ENV, "ENV " + " \\\n    ".join(pairs))


def _literal(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")


@dataclass(frozen=True)
class Stage:
    name: str
    kind: StageKind
    parents: tuple[str, ...]
    dockerfile: str
    context: tuple[ContextItem, ...]
    inputs: StageInputs
    files: tuple[tuple[str, str], ...] = ()  # (context path, text): scripts rendered beside the Dockerfile

    @property
    def network(self) -> bool:
        return self.inputs.network

    probes: tuple[ProbeSpec, ...] = ()
    probe_workdir: str = "/"
    env_capture: EnvCapture | None = None
    # A component's source alone (its context adds .debs and wheels): what `plan` names when it moved.
    source: ContextInput | None = None
    reads: Reads = ()  # what its build reads of each parent's image (plan.reads)
    image_prefix: str = DEFAULT_PREFIX  # its tags' (builder.model.names)
    # A component's use of the compile cache, or why it has none (None: it runs no build step); not in its key.
    compile_cache: CompileCacheUse | None = None

    def copies_only(self, parent: str) -> bool:
        """Whether its build takes only files of parent's image (copies them), not the image itself."""
        return EVERYTHING not in dict(self.reads).get(parent, (EVERYTHING,))

    def sees(self, parent: str, changed: Collection[str], links: Collection[str] = ()) -> bool:
        """Whether its build reads any of the files changed in parent's image (all of one it does not
        list; a path through one of links, the symbolic links of the layers changed is of, whole)."""
        return sees(dict(self.reads).get(parent, (EVERYTHING,)), changed, links)

    @cached_property
    def key(self) -> str:
        return stage_key(self.inputs)

    def tag(self) -> str:
        """Stage images are shared by every stack: the key says all about the content."""
        return f"{repository(self.image_prefix, STAGES, self.name)}:{self.key}"

    def pending_tag(self) -> str:
        return f"{repository(self.image_prefix, PENDING, self.name)}:{self.key}"

    def as_built_tag(self) -> str:
        """The image as the engine built it, before it is normalised: its children are built on it."""
        return f"{repository(self.image_prefix, PENDING, self.name)}:{self.key}-as-built"

    def failed_tag(self) -> str:
        return f"{repository(self.image_prefix, FAILED, self.name)}:{self.key}"


def parent_arg(name: str) -> str:
    """The build argument that names a parent stage's image in its children's Dockerfiles."""
    return f"{name.upper().replace('-', '_')}_IMAGE"


@dataclass(frozen=True)
class Plan:
    stack: str
    arch: Arch
    repository: str
    stages: Mapping[str, Stage]  # in build order
    drift: tuple[str, ...]
    final_tags: Mapping[str, str]  # final stage -> tag
    source_date_epoch: int  # the lock's: built images are normalised to it
    # Component -> the paths it installs outside its directory, and -> every component it needs.
    installs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    needs: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # The pinned image the base stages are built FROM (None: bootstrapped bases): its layers are parents'.
    base_image: str | None = None

    def order(self) -> list[Stage]:
        return list(self.stages.values())

    def children(self, name: str) -> list[Stage]:
        return [stage for stage in self.stages.values() if name in stage.parents]
