"""Smoke: the stack's smoke command in the final image, with the NPU when the host has one.

Without a device node, a stack whose smoke needs one gets static checks only and the
report says `launch: skipped (no NPU device on this host)`, never a pass.
"""

from __future__ import annotations

import glob
import re
from dataclasses import dataclass

import docker

from builder.engine import Engine
from builder.manifest import Smoke
from builder.render import TOOLKIT_HOME

# Device nodes and driver mounts an Ascend container needs (cann-container-image README).
CONTROL_DEVICES = ("/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc")
DRIVER_MOUNTS = (
    "/usr/local/dcmi",
    "/usr/local/bin/npu-smi",
    "/usr/local/Ascend/driver/lib64/",
    "/usr/local/Ascend/driver/version.info",
    "/etc/ascend_install.info",
)


def npu_devices() -> list[str]:
    return sorted(p for p in glob.glob("/dev/davinci*") if re.fullmatch(r"/dev/davinci\d+", p))


def device_flags(devices: list[str]) -> list[str]:
    """`docker run` flags giving a container the NPUs (what `stackbuild run` adds)."""
    flags = []
    for dev in [*devices, *CONTROL_DEVICES]:
        flags += ["--device", dev]
    for path in DRIVER_MOUNTS:
        flags += ["-v", f"{path}:{path}:ro"]
    return flags


@dataclass(frozen=True)
class SmokeResult:
    passed: bool
    launched: bool
    summary: str
    output: str


STATIC_CHECK = (
    f'test -d "{TOOLKIT_HOME}" && test -f "$ASCEND_TOOLKIT_HOME/$(uname -m)-linux/ascend_toolkit_install.info"'
    ' && echo "static checks: toolkit present, environment set"'
)


def run_smoke(engine: Engine, image: str, smoke: Smoke) -> SmokeResult:
    devices = npu_devices()
    if smoke.needs_device and not devices:
        static = engine.run(image, ["bash", "-c", STATIC_CHECK])
        return SmokeResult(
            False,
            False,
            "launch: skipped (no NPU device on this host); "
            + ("static checks passed" if static.exit_code == 0 else "static checks FAILED"),
            static.output,
        )
    command = ["bash", "-c", smoke.command]
    if devices:
        output, code = _run_with_devices(engine, image, command, devices)
    else:
        result = engine.run(image, command)
        output, code = result.output, result.exit_code
    passed = code == 0 and re.search(smoke.expect, output) is not None
    summary = f"launch: {'passed' if passed else 'FAILED'} (exit code {code})"
    return SmokeResult(passed, True, summary, output)


def _run_with_devices(engine: Engine, image: str, command: list[str], devices: list[str]) -> tuple[str, int]:
    mounts = [docker.types.Mount(p, p, type="bind", read_only=True) for p in DRIVER_MOUNTS]
    container = engine.client.containers.create(
        image, command, devices=[f"{d}:{d}" for d in [*devices, *CONTROL_DEVICES]], mounts=mounts, detach=True
    )
    try:
        container.start()
        status = container.wait(timeout=900)
        return container.logs().decode(errors="replace"), int(status.get("StatusCode", 1))
    finally:
        container.remove(force=True)
