"""The one small wrapper around the Docker Engine (docker-py) that the builder uses."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import IO, Any

import docker
import docker.errors

from builder.errors import StackbuildError

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


class EngineError(StackbuildError):
    pass


class BuildFailed(EngineError):
    def __init__(self, message: str, log_tail: list[str]) -> None:
        super().__init__(message)
        self.log_tail = log_tail


@dataclass(frozen=True)
class RunResult:
    exit_code: int
    output: str


class Engine:
    def __init__(self, client: docker.DockerClient | None = None) -> None:
        try:
            self.client = client or docker.from_env(timeout=600)
            self.client.ping()
        except docker.errors.DockerException as err:
            raise EngineError(
                f"cannot reach the Docker engine ({err}): run `python -m builder.hostsetup --docker` or start dockerd"
            ) from err
        self.api = self.client.api

    def image_id(self, ref: str) -> str | None:
        try:
            image_id: str = self.api.inspect_image(ref)["Id"]
            return image_id
        except docker.errors.ImageNotFound:
            return None

    def labels(self, ref: str) -> dict[str, str]:
        labels: dict[str, str] = self.api.inspect_image(ref)["Config"].get("Labels") or {}
        return labels

    def size(self, ref: str) -> int:
        size: int = self.api.inspect_image(ref)["Size"]
        return size

    def tag(self, image_id: str, ref: str) -> None:
        repository, _, tag = ref.rpartition(":")
        self.api.tag(image_id, repository, tag)

    def remove(self, ref: str) -> None:
        with contextlib.suppress(docker.errors.NotFound):
            self.api.remove_image(ref, force=True, noprune=False)

    def build(self, context: IO[bytes], log: Callable[[str], None], labels: dict[str, str], platform: str) -> str:
        """Build from a tar context holding a Dockerfile; returns the image id (untagged)."""
        image_id: str | None = None
        tail: list[str] = []
        stream: Iterable[dict[str, Any]] = self.api.build(
            fileobj=context,
            custom_context=True,
            rm=True,
            forcerm=True,
            labels=labels,
            decode=True,
            platform=platform,
            pull=False,
        )
        try:
            for chunk in stream:
                if "stream" in chunk:
                    for line in ANSI_ESCAPE.sub("", chunk["stream"]).splitlines():
                        log(line)
                        tail = [*tail[-39:], line]
                if "aux" in chunk and "ID" in chunk["aux"]:
                    image_id = chunk["aux"]["ID"]
                if "error" in chunk:
                    log(chunk["error"])
                    tail = [*tail[-39:], *chunk["error"].splitlines()]
                    raise BuildFailed(chunk["error"].strip().splitlines()[-1], tail)
        except docker.errors.APIError as err:
            raise BuildFailed(str(err), tail) from err
        if image_id is None:
            raise BuildFailed("the engine reported no image id", tail)
        return image_id

    def run(
        self, image: str, command: list[str], environment: dict[str, str] | None = None, workdir: str | None = None
    ) -> RunResult:
        """Run a command in a throwaway container; its exit code and combined output."""
        container = self.client.containers.create(
            image, command, environment=environment, working_dir=workdir, network_disabled=True, detach=True
        )
        try:
            container.start()
            status = container.wait(timeout=900)
            output = container.logs(stdout=True, stderr=True).decode(errors="replace")
            return RunResult(int(status.get("StatusCode", 1)), output)
        finally:
            container.remove(force=True)
