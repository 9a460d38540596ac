"""Smoke: the stack's smoke command in the final image, with the NPU when the host has one.

Without a device node, a stack whose smoke needs one gets static checks only and the
report says `launch: skipped (no NPU device on this host)`, never a pass.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from builder.engine import NO_DEVICES, DeviceAccess, Engine, launcher
from builder.manifest.model import Smoke
from builder.model.layout import CONTROL_DEVICES, DRIVER_MOUNTS
from builder.verify.diagnose import diagnose
from builder.verify.host import npus


def npu_devices(root: Path) -> tuple[str, ...]:
    """This host's NPU device nodes (under root: the settings' host_root), found as `stackbuild run` finds them."""
    return tuple(npus(root).values())


def device_access(devices: Sequence[str], groups: tuple[int, ...] = ()) -> DeviceAccess:
    """What a container needs to use these NPUs: the device nodes, the control nodes, the host driver,
    and the host's NPU group (verify.host.npu_group), which an image running as a user needs to open them."""
    if not devices:
        return NO_DEVICES
    return DeviceAccess(devices=(*devices, *CONTROL_DEVICES), read_only_mounts=DRIVER_MOUNTS, groups=groups)


@dataclass(frozen=True)
class SmokeResult:
    passed: bool
    launched: bool
    summary: str
    output: str
    access: DeviceAccess = NO_DEVICES

    @property
    def failed(self) -> bool:
        """Launched and failed: a launch skipped for want of an NPU is no failure (nor a pass)."""
        return self.launched and not self.passed


STATIC_CHECK = (
    'test -d "$ASCEND_TOOLKIT_HOME" && test -f "$ASCEND_TOOLKIT_HOME/$(uname -m)-linux/ascend_toolkit_install.info"'
    ' && echo "static checks: toolkit present, environment set"'
)


def run_smoke(
    engine: Engine, image: str, smoke: Smoke, devices: Sequence[str], groups: tuple[int, ...] = ()
) -> SmokeResult:
    """devices: the host's NPU device nodes (npu_devices); groups: its NPU group (npu_group)."""
    if smoke.needs_device and not devices:
        static = engine.run(image, ["bash", "-c", STATIC_CHECK])
        verdict = "static checks passed" if static.exit_code == 0 else "static checks FAILED"
        return SmokeResult(False, False, f"launch: skipped (no NPU device on this host); {verdict}", static.output)
    access = device_access(devices, groups)
    result = engine.run(image, ["bash", "-c", smoke.command], access=access)
    matched = re.search(smoke.expect, result.output) is not None
    passed = result.exit_code == 0 and matched
    summary = f"launch: {'passed' if passed else 'FAILED'} (exit code {result.exit_code})"
    if result.exit_code == 0 and not matched:  # it ran: what it was to print is the news
        summary = f"launch: FAILED (exit code 0, but its output has no match for the expected {smoke.expect!r})"
    return SmokeResult(passed, True, summary, result.output, access)


def smoke_log(log_dir: Path, stack: str, arch: str) -> Path:
    """Where a build's smoke output is kept: beside its stages' logs."""
    return log_dir / stack.lower() / arch / "smoke.log"


def smoke_report(outcome: SmokeResult, image: str, command: str, log: Path | None = None) -> list[str]:
    """What a person is told of a smoke (build's and publish's alike): its verdict, the engine's line
    to try it by hand, and for a failed launch the end of its output, the likely cause and, written to
    log (when given), the whole output."""
    lines = [f"[stackbuild] smoke: {outcome.summary}"]
    if outcome.access.devices:
        line = launcher().launch_line(image, ["bash", "-c", command], access=outcome.access)
        lines.append(f"[stackbuild] by hand: {shlex.join(line)}")
    if outcome.failed:
        lines.append(outcome.output[-2000:])
        if cause := diagnose(outcome.output.splitlines()):
            lines.append(f"[stackbuild] likely cause: {cause}")
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text(outcome.output)
            lines.append(f"[stackbuild] its whole output: {log}")
    return lines
