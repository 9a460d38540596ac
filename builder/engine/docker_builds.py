"""Stage builds on a Docker daemon: with BuildKit through the docker CLI when one has it (docker-py
has only the classic builder; `buildkit`), else with the classic builder through docker-py, its
progress stream read for the log and the image id. The settings' builder (STACKBUILD_BUILDER: auto,
buildkit or classic) chooses."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import docker
import docker.errors
import requests

from builder.engine import buildkit
from builder.engine.docker_daemon import START, DockerDaemon
from builder.engine.protocol import BuildFailed, BuildSpec, CacheMount, EngineError, EngineUnavailable, LogTail
from builder.model.settings import BUILDERS

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


class DockerBuilds:
    """Builds on daemon with the builder chosen: auto (BuildKit when a docker CLI has it), buildkit or
    classic."""

    def __init__(self, daemon: DockerDaemon, builder: str) -> None:
        self.daemon = daemon
        self.builder = builder
        if self.builder not in BUILDERS:
            raise EngineUnavailable(f"STACKBUILD_BUILDER={self.builder!r}: say one of {', '.join(BUILDERS)}", START)
        if self.builder == "buildkit":
            self.buildkit_cli  # noqa: B018 - asked for by name: no such CLI is an error now, not mid-build

    @functools.cached_property
    def buildkit_cli(self) -> str | None:
        """The docker CLI stage builds go through (None: the classic builder), found when first needed."""
        if self.builder == "classic":
            return None
        cli = buildkit.find_cli()
        if cli is None and self.builder == "buildkit":
            raise EngineUnavailable(
                "STACKBUILD_BUILDER=buildkit, but no docker CLI here runs BuildKit: install docker.io "
                "(its 20.10 client has it built in) or the buildx plugin",
                START,
            )
        return cli

    def describe(self) -> str:
        """Which builder stage builds go through (for `stackbuild doctor`)."""
        return f"BuildKit through {self.buildkit_cli}" if self.buildkit_cli else "classic (docker-py)"

    def build(self, context: Path, log: Callable[[str], None], spec: BuildSpec) -> str:
        """Build from a context directory holding a Dockerfile as spec says; the image id (untagged)."""
        if self.buildkit_cli:
            return buildkit.build(self.buildkit_cli, self.daemon.host, context, log, spec)
        return _classic_build(self.daemon.client, context, log, spec)


def _classic_build(client: docker.DockerClient, context: Path, log: Callable[[str], None], spec: BuildSpec) -> str:
    tail = LogTail(log)
    try:
        stream: Iterable[dict[str, Any]] = client.api.build(
            path=str(context),  # docker-py tars the directory as it sends it
            rm=True,
            forcerm=True,
            labels=dict(spec.labels),
            buildargs=dict(spec.args),
            decode=True,
            platform=spec.arch.platform,
            pull=False,
            nocache=spec.no_cache,
            # Builds are hermetic: everything a stage needs travels in its context (unless it declares network).
            network_mode="default" if spec.network else "none",
        )
        image_id = _follow(stream, tail)
    except (docker.errors.DockerException, requests.RequestException) as err:
        raise BuildFailed(str(err), tail.lines) from err
    except BuildFailed as err:
        raise BuildFailed(str(err), tail.lines) from err
    if image_id is None:
        raise BuildFailed("the engine reported no image id", tail.lines)
    return image_id


def _follow(stream: Iterable[dict[str, Any]], log: Callable[[str], None]) -> str | None:
    """Read a build's progress stream; the image id, or BuildFailed at the first error."""
    image_id = None
    for chunk in stream:
        if "stream" in chunk:
            for line in ANSI_ESCAPE.sub("", chunk["stream"]).splitlines():
                log(line)
        if "aux" in chunk and "ID" in chunk["aux"]:
            image_id = chunk["aux"]["ID"]
        if "error" in chunk:
            for line in chunk["error"].splitlines():
                log(line)
            raise BuildFailed(chunk["error"].strip().splitlines()[-1], [])
    return image_id


class DockerBuildCaches:
    """The builder's cache mounts (BuildCaches), asked of the daemon: a DockerEngine's."""

    builds: DockerBuilds
    if TYPE_CHECKING:  # DockerDaemon's, beside which it is mixed in

        @property
        def client(self) -> docker.DockerClient: ...

    def mounts(self) -> bool:
        return self.builds.buildkit_cli is not None

    def cache_mounts(self) -> list[CacheMount]:
        try:
            entries = self.client.df().get("BuildCache") or []
        except (docker.errors.DockerException, requests.RequestException) as err:
            raise EngineError(f"cannot ask the engine for its build cache: {err}") from err
        return [
            CacheMount(e["ID"], e.get("Description") or "", e.get("Size") or 0)
            for e in entries
            if e.get("Type") == "exec.cachemount"
        ]

    def remove_cache_mount(self, mount_id: str) -> int:
        try:
            api: Any = self.client.api  # its stubs know the until and dangling filters only
            freed: int = api.prune_builds(filters={"id": [mount_id]}).get("SpaceReclaimed") or 0
        except (docker.errors.DockerException, requests.RequestException) as err:
            raise EngineError(f"cannot remove the cache mount {mount_id}: {err}") from err
        return freed
