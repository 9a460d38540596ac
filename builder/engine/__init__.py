"""The seam around the container engine: its Protocols (`Engine`, `LayerStore`, `Launcher`) and
their Docker implementation, made here and nowhere else (`connect`, `launcher`).

Only this package imports docker or runs the docker binary (lint and tests/unit/engine/test_engine_seam.py
enforce it). Every container is run through one context manager, so cleanup happens on errors and
Ctrl-C, and engine failures and timeouts become EngineError here.
"""

from __future__ import annotations

from builder.engine.overlay import LayerDirs
from builder.engine.protocol import (
    NO_DEVICES,
    Attach,
    BuildEngine,
    BuildFailed,
    BuildSpec,
    CacheMount,
    DeviceAccess,
    Engine,
    EngineError,
    EngineFacts,
    EngineUnavailable,
    ImageFacts,
    Launcher,
    LayerStore,
    RunResult,
)
from builder.model.settings import RegistryCredentials

__all__ = [
    "NO_DEVICES",
    "Attach",
    "BuildEngine",
    "BuildFailed",
    "BuildSpec",
    "CacheMount",
    "DeviceAccess",
    "Engine",
    "EngineError",
    "EngineFacts",
    "EngineUnavailable",
    "ImageFacts",
    "Launcher",
    "LayerDirs",
    "LayerStore",
    "RunResult",
    "connect",
    "launcher",
]


def connect(
    url: str | None = None, builder: str = "auto", credentials: RegistryCredentials | None = None
) -> BuildEngine:
    """The one place an engine is made: the Docker engine at url (unix://, tcp://, ssh://), else
    DOCKER_HOST's, else the local socket; builder: auto, buildkit or classic; credentials: the registry
    login its pulls and pushes send (None: Docker's config's). Both come from the settings the command
    line resolved. docker-py is imported only when one is needed."""
    from builder.engine.docker_engine import DockerEngine

    return DockerEngine(url, builder, credentials)


def launcher() -> Launcher:
    """The client people start images with on the engine connect() makes: the docker CLI (on the daemon
    DOCKER_HOST names, else its own current context). No engine is reached: `run --print` prints its
    line on any host."""
    from builder.engine.docker_launch import DockerLauncher

    return DockerLauncher()
