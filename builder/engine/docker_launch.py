"""The Launcher on Docker: `docker run` lines, for people to type and for `stackbuild run` and
`shell` to become. The docker CLI, not docker-py: an interactive container needs its terminal handling."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from typing import NoReturn

from builder.engine.protocol import NO_DEVICES, Attach, DeviceAccess, EngineError

CLIENT = "docker"


def run_flags(access: DeviceAccess) -> list[str]:
    """access as `docker run` flags: --device per node, -v per host path, read-only (CANN's own line
    mounts the driver writable, and a root container given the host's npu-smi or driver libraries
    writable could replace them for the host: issue 48), --group-add per group."""
    flags = ["--runtime", access.runtime] if access.runtime else []
    for name, value in access.environment:
        flags += ["-e", f"{name}={value}"]
    for dev in access.devices:
        flags += ["--device", dev]
    for path in access.read_only_mounts:
        flags += ["-v", f"{path}:{path}:ro"]
    for group in access.groups:
        flags += ["--group-add", str(group)]
    return flags


class DockerLauncher:
    """`docker run --rm`, the options before the image and the command after it (argv, no shell)."""

    def launch_line(
        self,
        image: str,
        command: Sequence[str],
        *,
        access: DeviceAccess = NO_DEVICES,
        network: bool = True,
        attach: Attach = "none",
    ) -> list[str]:
        options = {"none": [], "stdin": ["-i"], "terminal": ["-it"]}[attach]
        options += [] if network else ["--network", "none"]
        return [CLIENT, "run", "--rm", *options, *run_flags(access), image, *command]

    def launch(self, line: Sequence[str]) -> NoReturn:
        program = shutil.which(line[0])
        if program is None:
            raise EngineError(f"no {line[0]} command here: install docker.io (`python -m builder.hostsetup --docker`)")
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(program, [program, *line[1:]])
