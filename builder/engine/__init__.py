"""The seam around the container engine: a Protocol (`Engine`) and its docker-py implementation.

Only this package imports docker (lint enforces it). Every container is run through one
context manager, so cleanup happens on errors and Ctrl-C, and engine failures and timeouts
become EngineError here.
"""

from builder.engine.overlay import LayerDirs
from builder.engine.protocol import NO_DEVICES, BuildFailed, BuildSpec, DeviceAccess, Engine, EngineError, RunResult

__all__ = ["NO_DEVICES", "BuildFailed", "BuildSpec", "DeviceAccess", "Engine", "EngineError", "LayerDirs", "RunResult"]
