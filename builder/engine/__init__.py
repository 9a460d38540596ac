"""The seam around the container engine: a Protocol (`Engine`) and its docker-py implementation.

Only this package imports docker (lint enforces it). Every container is run through one
context manager, so cleanup happens on errors and Ctrl-C, and engine failures and timeouts
become EngineError here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from builder.engine.overlay import LayerDirs
from builder.engine.protocol import (
    NO_DEVICES,
    BuildEngine,
    BuildFailed,
    BuildSpec,
    DeviceAccess,
    Engine,
    EngineError,
    ImageFacts,
    LayerStore,
    RunResult,
)

if TYPE_CHECKING:
    from builder.engine.docker_engine import DockerEngine

__all__ = [
    "NO_DEVICES",
    "BuildEngine",
    "BuildFailed",
    "BuildSpec",
    "DeviceAccess",
    "Engine",
    "EngineError",
    "ImageFacts",
    "LayerDirs",
    "LayerStore",
    "RunResult",
    "connect",
]


def connect(url: str | None = None, builder: str | None = None) -> DockerEngine:
    """The one place an engine is made: the Docker engine at url (unix://, tcp://, ssh://), else
    DOCKER_HOST's, else the local socket; builder: auto, buildkit or classic (default
    $STACKBUILD_BUILDER). docker-py is imported only when one is needed."""
    from builder.engine.docker_engine import DockerEngine

    return DockerEngine(url, builder)
