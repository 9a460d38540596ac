"""The Container Device Interface specs a host holds for its NPUs: which CDI device gives which
/dev/davinci<N>, read from the spec directories the CDI specification names (under a root: `/`, or a
test tree, as host.py reads /dev). No vendor's kind is assumed: a device is an NPU's when its
container edits add that NPU's device node. Docker runs `--device <kind>=<name>` from 25.0 with CDI
enabled; this host's 20.10 cannot, so `run` only prints that form."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from builder.engine import DeviceAccess
from builder.model.errors import InputError
from builder.verify.host import NPU_DEVICE, npu_group

# CDI SPEC.md, "CDI JSON Specification": the static and the dynamic spec directory.
SPEC_DIRS = ("etc/cdi", "var/run/cdi")
# CDI SPEC.md, "kind" and "name" (pkg/parser: vendor and class names, a device name): what reaches a
# command line is only ever a name of this shape.
KIND = re.compile(
    r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    r"/[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?"
)
NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.:-]*[A-Za-z0-9])?")
CDI_DOCKER = 'Docker 25 or later with CDI enabled (daemon.json: "features": {"cdi": true})'


@dataclass(frozen=True)
class NpuDevice:
    """One CDI device that adds NPU device nodes: its qualified name (kind=name), the NPU numbers
    its nodes are, and the spec file it came from (its path on the host)."""

    qualified: str
    npus: tuple[int, ...]
    spec: str


def _nodes(edits: Any) -> list[int]:
    """The NPU numbers of the /dev/davinci<N> nodes a containerEdits adds."""
    nodes = edits.get("deviceNodes") if isinstance(edits, dict) else None
    found = []
    for node in nodes if isinstance(nodes, list) else []:
        path = node.get("path") if isinstance(node, dict) else None
        if isinstance(path, str) and (m := NPU_DEVICE.fullmatch(path.removeprefix("/dev/"))):
            found.append(int(m.group(1)))
    return found


def _devices(spec: Path, root: Path) -> list[NpuDevice]:
    """The NPU devices of one spec file; none when it is unreadable or not of CDI's shape."""
    try:
        document = yaml.safe_load(spec.read_text())  # YAML, and JSON, which YAML reads
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []
    if not isinstance(document, dict) or not isinstance(kind := document.get("kind"), str):
        return []
    if not KIND.fullmatch(kind) or not isinstance(devices := document.get("devices"), list):
        return []
    found = []
    for device in devices:
        name = device.get("name") if isinstance(device, dict) else None
        if isinstance(name, str) and NAME.fullmatch(name) and (numbers := _nodes(device.get("containerEdits"))):
            found.append(NpuDevice(f"{kind}={name}", tuple(sorted(numbers)), f"/{spec.relative_to(root).as_posix()}"))
    return found


def npu_devices(root: Path) -> list[NpuDevice]:
    """Every CDI device under root's spec directories that adds NPU nodes, in file-name order."""
    specs = [p for d in SPEC_DIRS for p in sorted((root / d).glob("*")) if p.suffix in (".json", ".yaml")]
    return [device for spec in specs for device in _devices(spec, root)]


def cdi_access(root: Path, picked: Sequence[int] = ()) -> DeviceAccess:
    """The CDI devices giving the picked NPUs (none picked: every device giving one NPU alone, so a
    device that gives all of them is not added twice; every device where none gives one alone), with the
    host's NPU group, as the other forms add it."""
    devices = npu_devices(root)
    if not devices:
        where = " or ".join(f"/{d}" for d in SPEC_DIRS)
        raise InputError(f"--format cdi: no CDI spec in {where} adds a /dev/davinci<N>: use the default form")
    single = {d.npus[0]: d for d in devices if len(d.npus) == 1}
    if missing := [n for n in picked if n not in single]:
        have = ", ".join(str(n) for n in single) or "none"
        raise InputError(f"--device {missing[0]}: no CDI device gives NPU {missing[0]} alone (they give: {have})")
    chosen = [single[n] for n in picked] if picked else list(single.values()) or devices
    return DeviceAccess(tuple(d.qualified for d in chosen), groups=npu_group(root))
