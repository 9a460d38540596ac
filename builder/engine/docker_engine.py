"""The Engine on a Docker daemon, through docker-py: the daemon's connection (`docker_daemon`) and its
layer store (`docker_layers`), with images by ref (`docker_images`), registry transfers
(`docker_transfer`), stage builds (`docker_builds`: BuildKit through the docker CLI when one has it,
else the classic builder) and throwaway containers (`docker_containers`) each in a module of its own.

The builder (auto: BuildKit when available, buildkit or classic) is the settings' (STACKBUILD_BUILDER)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from builder.engine import docker_containers, docker_images, docker_transfer
from builder.engine.docker_builds import DockerBuildCaches, DockerBuilds
from builder.engine.docker_layers import DockerLayerStore
from builder.engine.protocol import (
    NO_DEVICES,
    BuildSpec,
    DeviceAccess,
    EngineFacts,
    ImageFacts,
    RunResult,
)
from builder.model.arch import Arch
from builder.model.registry import registry_of
from builder.model.retry import RetryPolicy
from builder.model.settings import RegistryCredentials, login_for


class DockerEngine(DockerLayerStore, DockerBuildCaches):
    """The Engine, and the LayerStore it inherits: a BuildEngine."""

    def __init__(
        self,
        host: str | None = None,
        builder: str = "auto",
        credentials: RegistryCredentials | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        """host: a daemon address (unix:///..., tcp://...); default DOCKER_HOST or the local socket.
        builder: auto (BuildKit when a docker CLI has it), buildkit or classic. credentials: the
        environment's registry login (the settings'), else Docker's config is used. retry: how registry
        transfers are tried again."""
        super().__init__(host)
        self.retry = retry or RetryPolicy()
        self.credentials = credentials
        self.builds = DockerBuilds(self, builder)

    def image_id(self, ref: str) -> str | None:
        return docker_images.image_id(self.client, ref)

    def inspect(self, ref: str) -> ImageFacts:
        return docker_images.image_facts(self.client, ref)

    def tag(self, image_id: str, ref: str) -> None:
        docker_images.tag_image(self.client, image_id, ref)

    def remove(self, ref: str) -> None:
        docker_images.remove_image(self.client, ref)

    def tags(self, repository: str) -> set[str]:
        return docker_images.repository_tags(self.client, repository)

    def pull(self, ref: str, arch: Arch) -> str | None:
        return (
            self.image_id(ref)
            if docker_transfer.pulled(self.client, ref, arch, self.retry, login_for(self.credentials, registry_of(ref)))
            else None
        )

    def push(self, image_id: str, ref: str) -> str:
        self.tag(image_id, ref)
        try:
            return docker_transfer.pushed(self.client, ref, self.retry, login_for(self.credentials, registry_of(ref)))
        finally:
            self.remove(ref)

    def build(self, context: Path, log: Callable[[str], None], spec: BuildSpec) -> str:
        return self.builds.build(context, log, spec)

    def files(self, image: str, paths: Sequence[str], arch: Arch) -> dict[str, bytes]:
        return docker_containers.image_files(self.client, image, paths, arch)

    def run(
        self,
        image: str,
        command: list[str],
        *,
        workdir: str | None = None,
        access: DeviceAccess = NO_DEVICES,
        timeout: float = 900,
        entrypoint: Sequence[str] | None = None,
    ) -> RunResult:
        return docker_containers.run_container(self.client, image, command, workdir, access, timeout, entrypoint)

    def about(self) -> EngineFacts:
        return self.facts(self.builds.describe())
