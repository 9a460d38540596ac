"""A stage's environment taken from the image it built: the release's scripts (then the components'
own env_scripts) sourced there, what they set added as ENV to its config (plan.plan_model.EnvCapture: a
Dockerfile of config instructions alone, which the engine applies without a second build). The
environment is only known once the toolkit is installed, and stays what CANN's own set_env.sh says
instead of a table of ours."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from builder.engine import BuildEngine, Engine
from builder.model.errors import StackbuildError
from builder.plan.plan_model import EnvCapture
from builder.verify.probe_runner import BASH_OWN, tidied

BEFORE, AFTER = "stackbuild-env-before ", "stackbuild-env-after "
# Names ENV cannot hold (bash's exported functions) are not baked, nor what bash sets itself (BASH_OWN).
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class EnvironmentUnreadable(StackbuildError):
    """The scripts could not be sourced in the built image, or set what ENV cannot hold."""


def set_by_scripts(output: str) -> dict[str, str]:
    """What the capture script's output says the scripts set: each variable new or changed."""
    dumps = {}
    for line in output.splitlines():
        for marker in (BEFORE, AFTER):
            if line.startswith(marker):
                dumps[marker] = json.loads(line.removeprefix(marker))
    if len(dumps) != 2:
        tail = " | ".join(output.strip().splitlines()[-3:])
        raise EnvironmentUnreadable(f"cannot source the environment scripts: {tail or 'no output'}")
    before, after = dumps[BEFORE], dumps[AFTER]
    changed = {
        name: tidied(name, value)
        for name, value in after.items()
        if name not in BASH_OWN and ENV_NAME.match(name) and before.get(name) != value
    }
    if bad := sorted(name for name, value in changed.items() if "\n" in value or "\r" in value):
        raise EnvironmentUnreadable(f"the environment scripts set {bad[0]} to several lines: ENV cannot hold it")
    return changed


def read(engine: Engine, image: str, env_capture: EnvCapture) -> dict[str, str]:
    """Source the scripts in a bash of image that has its ENV and nothing else (what a build step
    sees): no profile or rc file, and not through the image's entrypoint (a base's may source them)."""
    command = ["/bin/bash", "--noprofile", "--norc", "-c", env_capture.capture]
    result = engine.run(image, command, timeout=300, entrypoint=("env",))
    if result.exit_code != 0:
        tail = " | ".join(result.output.strip().splitlines()[-3:])
        raise EnvironmentUnreadable(f"sourcing the environment scripts failed (exit code {result.exit_code}): {tail}")
    return set_by_scripts(result.output)


def add(engine: BuildEngine, built: str, env_capture: EnvCapture, log: Callable[[str], None]) -> str:
    """The built image with the environment its scripts set added to its config (ENV, then its
    entrypoint), by the engine with the Dockerfile's rules and no layer of its own; its id."""
    found = read(engine, built, env_capture)
    log(f"# environment from the scripts: {', '.join(sorted(found)) or 'nothing'}")
    return engine.configure(built, env_capture.changes(found))
