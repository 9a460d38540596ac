"""Probes: checks run in a container of a stage just built, for the known silent failures.

Built-in kinds (declared per component in the manifest):
  elf-section  the section exists in the file and is not empty (empty kernel metadata)
  linked-from  every shared library the file needs resolves, and the named ones resolve
               inside a directory (the runtime linked against a stray ACL copy)
  env          variables are set / name paths that exist
  command      a command exits with the expected code and prints what is expected
and, from a component's `imports`, imports: each module imports in a fresh python3 (in its stage,
the devel image and, when the component reaches it, the runtime image);
for the runtime image, closure: every ELF file under the CANN tree and the stack's directory has each
library it needs (DT_NEEDED) resolved by the loader in the image's environment, but those only the
host's driver provides (layout.DRIVER_LIBRARIES);
and, for the toolkit stage, set-env: each variable the release's environment scripts set has in the
image's ENV the value they give it. The probes of a stage run in a container of it through its
entrypoint (set-env in a second one without it), by probe_runner.py (standard library only), so the
image needs python3.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.engine import Engine
from builder.manifest.components import Component
from builder.manifest.probe_specs import Probe
from builder.model.layout import ASCEND_ROOT, DRIVER_LIBRARIES, STACK_ROOT, ToolkitLayout

RUNNER = (Path(__file__).parent / "probe_runner.py").read_text()
# Part of every probed stage's key: a change to how probes run re-probes cached stages.
RUNNER_SHA256 = hashlib.sha256(RUNNER.encode()).hexdigest()
ProbeSpec = dict[str, Any]
# Probes of the ENV in the image's config, which its entrypoint changes (it sources set_env.sh again):
# they run with an entrypoint that only runs the command.
OWN_ENV_KINDS = frozenset({"set-env"})
ENV_ONLY = ("env",)


def toolkit_probes(layout: ToolkitLayout) -> tuple[ProbeSpec, ...]:
    return (
        {"kind": "set-env", "scripts": [list(s) for s in layout.env_scripts()], "root": ASCEND_ROOT},
        {"kind": "env", "set": [], "paths": ["ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"]},
    )


def closure_probe() -> ProbeSpec:
    """The runtime image's: what it holds of CANN and of the stack (the smoke's files) loads there."""
    return {"kind": "closure", "roots": [ASCEND_ROOT, STACK_ROOT], "provided": list(DRIVER_LIBRARIES)}


@dataclass(frozen=True)
class ProbeResult:
    name: str
    ok: bool
    message: str


def describe(probe: ProbeSpec) -> str:
    kind = probe["kind"]
    if kind == "elf-section":
        return f"elf-section {probe['section']} in {probe['file']}"
    if kind == "linked-from":
        return f"linked-from {probe['file']} within {probe['within']}"
    if kind == "env":
        return f"env {' '.join(probe['set'] + probe['paths'])}"
    if kind == "command":
        return f"command {probe['run']}"
    if kind == "exists":
        return f"exists {' '.join(probe['paths'])}"
    if kind == "imports":
        return f"imports {' '.join(probe['modules'])}"
    if kind == "closure":
        return f"closure of the ELF files under {' '.join(probe['roots'])}"
    return str(kind)


def specs(probes: Sequence[Probe]) -> tuple[ProbeSpec, ...]:
    return tuple(p.model_dump(mode="json") for p in probes)


def python_probe(version: str) -> ProbeSpec:
    """The base's python3 is the platform's (CANN, the Python layers and the probes all run on it)."""
    return {"kind": "command", "run": "python3 --version", "exit_code": 0, "expect": rf"^Python {re.escape(version)}\."}


def imports_probe(modules: Sequence[str]) -> tuple[ProbeSpec, ...]:
    """Each module imported by a fresh python3 (the image's environment, as a user's would be)."""
    return ({"kind": "imports", "modules": list(modules)},) if modules else ()


def component_probes(component: Component) -> tuple[ProbeSpec, ...]:
    """The component's own probes, that what it says it installs exists, and that its modules import."""
    installs = [i.path for i in component.installs]
    return (
        specs(component.probes)
        + (({"kind": "exists", "paths": installs},) if installs else ())
        + imports_probe(component.imports)
    )


def run_probes(engine: Engine, image: str, workdir: str, probes: Sequence[ProbeSpec]) -> list[ProbeResult]:
    """Run the probes in a container of image, through its entrypoint (as `run`, `shell` and the smoke
    go); set-env, which reads the ENV the image itself carries, in one that skips it. One result per
    probe, in order."""
    results: dict[int, ProbeResult] = {}
    for entrypoint, wanted in ((ENV_ONLY, True), (None, False)):
        group = [n for n, p in enumerate(probes) if (p["kind"] in OWN_ENV_KINDS) == wanted]
        outcomes = _in_container(engine, image, workdir, [probes[n] for n in group], entrypoint)
        results.update(zip(group, outcomes, strict=True))
    return [results[n] for n in range(len(probes))]


def _in_container(
    engine: Engine, image: str, workdir: str, probes: Sequence[ProbeSpec], entrypoint: Sequence[str] | None
) -> list[ProbeResult]:
    if not probes:
        return []
    command = ["python3", "-c", RUNNER, json.dumps(list(probes))]
    out = engine.run(image, command, workdir=workdir, entrypoint=entrypoint)
    try:
        answers = json.loads(out.output.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        reason = f"the probe runner failed (exit code {out.exit_code}): {out.output.strip()[-300:]}"
        return [ProbeResult(describe(spec), False, reason) for spec in probes]
    return [ProbeResult(describe(spec), a["ok"], a["message"]) for spec, a in zip(probes, answers, strict=True)]
