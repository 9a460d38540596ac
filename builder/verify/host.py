"""What this host can give a container of the stack: its NPU device nodes and driver paths, as the
facts of CANN's own `docker run` name them, found under a root (`/`, or a test tree standing in
for /dev and /usr/local/Ascend: the settings' host_root)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from builder.engine import DeviceAccess
from builder.model.errors import InputError
from builder.model.layout import CONTROL_DEVICES, DRIVER_MOUNTS

NPU_DEVICE = re.compile(r"davinci(\d+)")
ASCEND_RUNTIME = "ascend"  # the Ascend Docker Runtime's name in the engine's runtimes
VISIBLE_DEVICES = re.compile(r"\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*")  # ASCEND_VISIBLE_DEVICES: 0,1 or 0-3
DRIVER_USER = "HwHiAiUser"  # the user and group the driver installer runs the driver as
DECIMAL_ID = re.compile(r"[0-9]{1,10}")  # a UID or GID as /etc/passwd and /etc/group write it (ASCII only)


@dataclass(frozen=True)
class HostAccess:
    devices: tuple[str, ...]  # device nodes, as paths on the host
    mounts: tuple[str, ...]  # driver paths, mounted at the same place
    notes: tuple[str, ...] = ()
    visible: str = ""  # the NPUs the Ascend Docker Runtime gives (it mounts nodes and driver itself); "": none
    groups: tuple[int, ...] = ()  # the host's NPU group (npu_group), added so a non-root image opens them

    @property
    def access(self) -> DeviceAccess:
        """What a container gets of them: CANN's canonical `docker run` gives each node and driver path,
        but mounts the driver writable; here every one is read-only (a root container given the host's
        npu-smi or driver libraries writable could replace them for the host: issue 48)."""
        if self.visible:
            environment = (("ASCEND_VISIBLE_DEVICES", self.visible),)
            return DeviceAccess(runtime=ASCEND_RUNTIME, environment=environment, groups=self.groups)
        return DeviceAccess(self.devices, self.mounts, groups=self.groups)


def npus(root: Path) -> dict[int, str]:
    """The NPU device nodes under root's /dev, by number."""
    dev = root / "dev"
    found = {int(m.group(1)): f"/dev/{p.name}" for p in dev.glob("davinci*") if (m := NPU_DEVICE.fullmatch(p.name))}
    return dict(sorted(found.items()))


def host_ids(root: Path, name: str) -> tuple[int | None, int | None]:
    """name's UID (root's /etc/passwd) and its group's GID (/etc/group); None where absent."""

    def field(table: str, index: int) -> int | None:
        path = root / "etc" / table
        for line in path.read_text(errors="replace").splitlines() if path.is_file() else []:
            fields = line.split(":")
            if len(fields) > index and fields[0] == name and DECIMAL_ID.fullmatch(fields[index]):
                return int(fields[index])
        return None

    return field("passwd", 2), field("group", 2)


def npu_group(root: Path) -> tuple[int, ...]:
    """The host group that opens its NPUs for a container that does not run as root: the device nodes'
    (the driver makes them HwHiAiUser:HwHiAiUser 0660, vllm-ascend#9490), else, where they are root's,
    the host's HwHiAiUser group; none without an NPU. A root container loses nothing by it."""
    nodes = [root / node.lstrip("/") for node in npus(root).values()]
    if not nodes:
        return ()
    gid = next((found for node in nodes if (found := os.stat(node).st_gid) != 0), None)
    gid = gid if gid is not None else host_ids(root, DRIVER_USER)[1]
    return () if gid is None else (gid,)


NO_NPU = "no NPU on this host (no /dev/davinci<N>): the container gets no devices"


def _chosen(present: Mapping[int, str], picked: Sequence[int]) -> list[int]:
    """The picked NPU numbers (none picked: every one), each one this host has."""
    if missing := [n for n in picked if n not in present]:
        have = ", ".join(str(n) for n in present)
        raise InputError(f"--device {missing[0]}: this host has no /dev/davinci{missing[0]} (it has: {have})")
    return list(picked or present)


def runtime_access(root: Path, picked: Sequence[int] = (), visible: str | None = None) -> HostAccess:
    """The NPUs as the Ascend Docker Runtime takes them (MindCluster's: it adds the nodes and mounts the
    driver itself): ASCEND_VISIBLE_DEVICES, the caller's own (visible), else the picked numbers, else
    every NPU this host has; nothing when it has none."""
    if visible is not None:
        if not VISIBLE_DEVICES.fullmatch(visible):
            raise InputError(
                f"ASCEND_VISIBLE_DEVICES={visible[:40]!r}: say NPU numbers and ranges (0,1 or 0-3), or unset it"
            )
        return HostAccess((), (), visible=visible, groups=npu_group(root))
    present = npus(root)
    if not present:
        return HostAccess((), (), (NO_NPU,))
    chosen = ",".join(str(n) for n in _chosen(present, picked))
    return HostAccess((), (), visible=chosen, groups=npu_group(root))


def host_access(root: Path, picked: Sequence[int] = ()) -> HostAccess:
    """The NPUs (all, or the picked numbers), the control nodes and the driver paths this host has;
    nothing at all when it has no NPU, with a note saying so."""
    present = npus(root)
    if not present:
        return HostAccess((), (), (NO_NPU,))
    chosen = [present[n] for n in _chosen(present, picked)]
    notes = []
    control = [d for d in CONTROL_DEVICES if (root / d.lstrip("/")).exists()]
    if lacking := [d for d in CONTROL_DEVICES if d not in control]:
        notes.append(f"missing control devices {', '.join(lacking)}: is the driver loaded?")
    mounts = [p for p in DRIVER_MOUNTS if (root / p.lstrip("/")).exists()]
    if lacking := [p for p in DRIVER_MOUNTS if p not in mounts]:
        notes.append(f"missing driver paths {', '.join(lacking)}: is the driver installed?")
    return HostAccess((*chosen, *control), tuple(mounts), tuple(notes), groups=npu_group(root))
