"""A stack's devel image as a dev container: `.devcontainer/devcontainer.json` (the Development
Containers spec, read by VS Code and the devcontainers CLI) with what `stackbuild run` gives a
container on this host: the NPUs and driver paths read-only, or the Ascend Docker Runtime."""

from __future__ import annotations

import json
from typing import Any

from builder.engine import DeviceAccess
from builder.manifest.model import ROOT, RunUser
from builder.model.layout import STACK_ROOT


def configuration(name: str, image: str, access: DeviceAccess, user: RunUser | None = None) -> dict[str, Any]:
    """devcontainer.json for image (a devel image's tag), given access (what `run` would give it) and
    the user it runs as (None: root)."""
    run_args: list[str] = ["--runtime", access.runtime] if access.runtime else []
    for variable, value in access.environment:
        run_args += ["-e", f"{variable}={value}"]
    for device in access.devices:
        run_args += ["--device", device]
    for group in access.groups:
        run_args += ["--group-add", str(group)]
    config: dict[str, Any] = {
        "name": name,
        "image": image,
        "runArgs": run_args,
        # docker run --mount's form: read-only, as `run` mounts them.
        "mounts": [
            f"source={p.rstrip('/')},target={p.rstrip('/')},type=bind,readonly" for p in access.read_only_mounts
        ],
        # What CANN's scripts set is baked into the image as ENV: the editor's shells have it too.
        "workspaceFolder": STACK_ROOT,
        "remoteUser": ROOT,
    }
    if user:  # the image's user, for the container and the editor's processes alike
        config |= {"containerUser": user.name, "remoteUser": user.name}
    return config


def _paths(access: DeviceAccess) -> list[str]:
    return [path.rstrip("/") for path in access.read_only_mounts]


def text(name: str, image: str, access: DeviceAccess, user: RunUser | None = None) -> str:
    return json.dumps(configuration(name, image, access, user), indent=2) + "\n"
