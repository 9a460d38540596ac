"""One Docker daemon, through docker-py: the connection (a client per thread, since docker-py's are
not shared between threads) and what the daemon says of itself: whether one answers, its version and
storage, and where an overlay2 engine on this machine keeps its layers."""

from __future__ import annotations

import functools
import os
import threading
from pathlib import Path

import docker
import docker.errors
import requests

from builder.engine.protocol import EngineFacts, EngineUnavailable
from builder.model.arch import Arch

# Doctor's fix for a Docker that is not there, not running or without BuildKit.
START = "python -m builder.hostsetup --docker (installs docker.io and starts dockerd)"


def reachable(timeout: int = 5) -> bool:
    """Whether a Docker engine answers (DOCKER_HOST or the default socket)."""
    try:
        docker.from_env(timeout=timeout).ping()
        return True
    except (docker.errors.DockerException, requests.RequestException):
        return False


class DockerDaemon:
    """The daemon at host (unix:///..., tcp://...; default DOCKER_HOST or the local socket)."""

    def __init__(self, host: str | None = None) -> None:
        self.host = host
        self._local = threading.local()
        self.client  # noqa: B018 - fail now, with the fix, if no engine answers

    @property
    def client(self) -> docker.DockerClient:
        # docker-py clients are not shared between threads: one per thread.
        if not hasattr(self._local, "client"):
            try:
                # As DOCKER_HOST would be: TLS from DOCKER_TLS_VERIFY/DOCKER_CERT_PATH, ssh:// through ssh.
                environment = dict(os.environ, DOCKER_HOST=self.host) if self.host else None
                ssh = bool(self.host and self.host.startswith("ssh://"))
                client = docker.from_env(timeout=600, environment=environment, use_ssh_client=ssh)
                client.ping()
            except (docker.errors.DockerException, requests.RequestException) as err:
                # The socket there but refused: this user may not use it (Docker's own group may).
                denied = "ermission denied" in str(err)
                raise EngineUnavailable(
                    f"cannot reach the Docker engine ({err})",
                    "usermod -aG docker $USER (then log in again), or run as root" if denied else START,
                    "run `python -m builder.hostsetup --docker` or start dockerd",
                ) from err
            self._local.client = client
        result: docker.DockerClient = self._local.client
        return result

    def facts(self, builder: str) -> EngineFacts:
        """The engine's version, API version, storage driver, data root and architecture, with the
        builder stage builds go through: the Engine's about()."""
        try:
            version, info = self.client.version(), self.client.info()
        except (docker.errors.DockerException, requests.RequestException) as err:
            raise EngineUnavailable(f"cannot ask the engine about itself: {err}", START) from err
        root = str(info.get("DockerRootDir", ""))
        return EngineFacts(
            "Docker",
            str(version.get("Version", "?")),
            str(version.get("ApiVersion", "?")),
            str(info.get("Driver", "?")),
            builder,
            Path(root) if root else None,
            tuple(sorted(info.get("Runtimes") or {})),
            Arch.of_machine(str(info.get("Architecture", ""))),
        )

    @functools.cached_property
    def overlay_root(self) -> Path | None:
        """The data root of an overlay2 engine on this machine, where this process can read it (its
        layers can be reassembled from their directories and tar-split records); None otherwise."""
        host = self.host or os.environ.get("DOCKER_HOST") or "unix://"
        if not host.startswith("unix://"):
            return None
        try:
            info = self.client.info()
        except (docker.errors.DockerException, requests.RequestException):
            return None  # then the layers come through `docker save`, which reports the error
        if info.get("Driver") != "overlay2":
            return None
        root = Path(str(info.get("DockerRootDir", "")))
        return root if root.is_absolute() and os.access(root, os.R_OK | os.X_OK) else None
