"""Probes: checks run in a container of a stage just built, for the known silent failures.

Built-in kinds (declared per component in the manifest):
  elf-section  the section exists in the file and is not empty (empty kernel metadata)
  linked-from  every shared library the file needs resolves, and the named ones resolve
               inside a directory (the runtime linked against a stray ACL copy)
  env          variables are set / name paths that exist
  command      a command exits with the expected code and prints what is expected
and, for the toolkit stage, set-env: the ENV baked into the image covers everything the
toolkit's set_env.sh exports. All probes of a stage run in one container, by
builder/probe_runner.py (standard library only), so the image needs python3.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.engine import Engine
from builder.manifest import CommandProbe, ElfSectionProbe, EnvProbe, LinkedFromProbe, Probe
from builder.render import STACK_ROOT, TOOLKIT_ROOT

RUNNER = (Path(__file__).parent / "probe_runner.py").read_text()
SET_ENV = {"kind": "set-env", "script": f"{TOOLKIT_ROOT}/set_env.sh"}
TOOLKIT_PROBES: list[dict[str, Any]] = [
    SET_ENV,
    {"kind": "env", "set": [], "paths": ["ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"]},
]


@dataclass(frozen=True)
class ProbeResult:
    name: str
    ok: bool
    message: str


def describe(probe: dict[str, Any]) -> str:
    kind = probe["kind"]
    if kind == "elf-section":
        return f"elf-section {probe['section']} in {probe['file']}"
    if kind == "linked-from":
        return f"linked-from {probe['file']} within {probe['within']}"
    if kind == "env":
        return f"env {' '.join(probe['set'] + probe['paths'])}"
    if kind == "command":
        return f"command {probe['run']}"
    return str(kind)


def as_spec(probe: Probe) -> dict[str, Any]:
    assert isinstance(probe, (ElfSectionProbe, LinkedFromProbe, EnvProbe, CommandProbe))
    return probe.model_dump(mode="json")


def run_probes(engine: Engine, image: str, workdir: str, specs: list[dict[str, Any]]) -> list[ProbeResult]:
    """Run the probes in one container of image; one result per probe."""
    if not specs:
        return []
    out = engine.run(image, ["python3", "-c", RUNNER, json.dumps(specs)], workdir=workdir)
    try:
        answers = json.loads(out.output.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        reason = f"the probe runner failed (exit code {out.exit_code}): {out.output.strip()[-300:]}"
        return [ProbeResult(describe(spec), False, reason) for spec in specs]
    return [ProbeResult(describe(spec), a["ok"], a["message"]) for spec, a in zip(specs, answers, strict=True)]


def component_probes(engine: Engine, image: str, component: str, probes: list[Probe]) -> list[ProbeResult]:
    return run_probes(engine, image, f"{STACK_ROOT}/{component}", [as_spec(p) for p in probes])


def toolkit_probes(engine: Engine, image: str) -> list[ProbeResult]:
    return run_probes(engine, image, "/", TOOLKIT_PROBES)
