"""Known failures of the Ascend stack (shared/ascend-facts.md): output pattern -> cause and fix."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence

KNOWN_FAILURES: tuple[tuple[str, str], ...] = (
    (
        r"toolkit version mismatch",
        "the package installed a different CANN version than the lock pins: the file does not hold what its name "
        "says; re-download it or relock with the right package",
    ),
    (
        r"no Ascend C devkit",
        "the toolkit ASCEND_HOME_PATH names has no Ascend C devkit: CANN ships it inside the toolkit package "
        "(the reference's under <toolkit>/ascendc), so source that toolkit's set_env.sh, or point ASCEND_C_INCLUDE "
        "at the headers",
    ),
    (
        r"ASCEND_TOOLKIT_HOME is not set|find_package\((CANN|ASCENDCL|HCCL)\)|ASCENDCL not found",
        "toolkit not installed or set_env.sh not sourced, or a hard-coded /usr/local/Ascend: the stage must use the "
        "toolkit's ENV",
    ),
    (
        r"package configuration file provided by \"?(ACL|ASC)\b",
        "CMAKE_PREFIX_PATH lacks the toolkit's lib64/cmake, which only its set_env.sh puts there: the image's ENV "
        "must be what set_env.sh sets (or the package that installs the CMake file is missing)",
    ),
    (
        r"\b(ascendcc|bisheng|ccec): (command )?not found|make: (ascendcc|bisheng|ccec): No such file or directory",
        "the toolkit's compiler is not on PATH: only its set_env.sh puts tools/ccec_compiler/bin there, so the "
        "image's ENV must be what set_env.sh sets",
    ),
    (
        r"undefined reference to [`']?(acl|rt)\w*",
        "linked against the wrong ACL library set (host/device/simulator): link the toolkit's lib64",
    ),
    (
        r"no __kernel_info section|__kernel_info is empty|empty or malformed __kernel_info",
        "kernel compiled by a wrong or missing compiler path: its object has no valid metadata; compile with the "
        "toolkit's compiler",
    ),
    (
        r"ACL_ERROR_INVALID_PARAM|ACL_ERROR_RT_PARAM_INVALID|\b10(0000|7000)\b",
        "launch arguments do not match the kernel signature, or a block dim is 0",
    ),
    (
        r"resolves libascendcl\.so to .*outside|Segmentation fault",
        "the runtime is linked against an ACL outside the pinned toolkit (an older copy in /usr/lib?): link "
        "$ASCEND_TOOLKIT_HOME/lib64",
    ),
    (
        r"ACL_ERROR_RT_INVALID_DEVICEID|\b107001\b|Failed to initialize device",
        "no NPU device, a driver/firmware mismatch, or the device not passed to the container (`stackbuild smoke` "
        "passes /dev/davinci* and the driver mounts, and prints the equivalent `docker run` flags)",
    ),
    (
        r"E30006|Failed to verify the OPP|ACL_ERROR_RT_DEV_SETUP_ERROR|\b507033\b",
        "the AICPU kernel package (opp/Ascend/aicpu/Ascend*-aicpu_syskernels.tar.gz) is missing or not the one the "
        "driver verifies: the image's CANN must keep it (vllm-ascend#4284; hicann/runtime tsdclient "
        "client_manager.cpp)",
    ),
    (
        r"\S+\.so\S* not found \(needed by ",
        "a library the runtime image needs is not in it: a component links what only the devel image has, or a "
        "driver library is missing from builder.model.layout.DRIVER_LIBRARIES",
    ),
    (
        r"libascend_hal\.so.*not found|libascend_hal\.so: cannot open",
        "the host driver's lib64 is not mounted into the container (-v /usr/local/Ascend/driver/lib64/...)",
    ),
    (r"libhccl\.so.*not found|libhccl\.so: cannot open", "set_env.sh was not sourced in the image"),
    (r"-8005", "the NPU is held by another process"),
    (
        r"the probe runner failed|python3\W+(executable file )?not found|exec: \"python3\"",
        "the image has no python3 (CANN, the Python layers and the probes need it): add python3 to the base, or "
        "install the platform's Python in it",
    ),
    (
        r"No module named|ModuleNotFoundError",
        "the image lacks a build or runtime requirement of the stack: add it to the base packages or the component",
    ),
    (
        r"--mount option requires BuildKit",
        "the toolkit stage and, from CANN 8.5.0, the runtime image bind-mount the installer packages (RUN --mount, "
        "so no layer holds them), which the classic builder cannot do: build them with BuildKit "
        "(STACKBUILD_BUILDER=buildkit and a docker CLI that has it, as Debian's docker.io does), or take them from a "
        "registry cache (--cache-from)",
    ),
    (
        r"bad return status for module build on kernel",
        "kernel headers do not match the running kernel (host driver install)",
    ),
)


def diagnose(lines: Iterable[str]) -> str | None:
    """The likely cause and fix of a failure whose output contains these lines."""
    text = "\n".join(lines)
    for pattern, cause in KNOWN_FAILURES:
        if re.search(pattern, text):
            return cause
    return None


# What builder/plan/templates/install-debs.sh prints when the lock's .debs do not install.
_STATED = re.compile(r"^stackbuild: (cannot install system package.*)$")
_APT_FAILED = re.compile(r"^stackbuild: system packages: apt-get exited with (\d+)")
_REASON = "stackbuild: | "
_TIMESTAMP = re.compile(r"^\d+\.\d+ ")  # buildx 0.11+ prefixes a failed step's repeated lines with one
_STEP_PREFIX = re.compile(r"^(?:#\d+ )?\d+\.\d+ ")  # BuildKit's step number and time before a line of output
_STEP_FAILED = re.compile(r"^stackbuild: [\w.-]+: (build step \d+/\d+: .* failed \(exit code \d+\))$")
_STRONG_CAUSE = re.compile(r": (?:fatal )?error:|^CMake Error|undefined reference|^error:|^E: ")
_CAUSE = re.compile(r"\berror\b|\bfatal\b|no such file|not found", re.I)
_DPKG_ERROR = re.compile(r"^dpkg: error processing (?:package (\S+)|archive (\S+)) \(--[a-z-]+\):$")
_UNMET = re.compile(r"^ (\S+) : (\S.*)$")


def install_failure(lines: Sequence[str]) -> str | None:
    """The headline of a failed install of the locked .debs: the package and apt's or dpkg's own
    reason, from the install script's marked lines (None: the output holds no such failure)."""
    lines = [_TIMESTAMP.sub("", line) for line in lines]
    for line in reversed(lines):
        if stated := _STATED.match(line):
            return stated.group(1)
    for at, line in enumerate(lines):
        if header := _APT_FAILED.match(line):
            reasons = list(itertools.takewhile(lambda line: line.startswith(_REASON), lines[at + 1 :]))
            found = _apt_reason([line.removeprefix(_REASON) for line in reasons])
            return found or f"cannot install system packages: apt-get exited with {header.group(1)}"
    return None


def step_failure(lines: Sequence[str]) -> str | None:
    """The headline of a failed build step: its own text and exit code (as build.sh says them), and
    the first line of its output before that which says why (the compiler's, cmake's, the linker's),
    with the line after it when that one ends in a colon (cmake's `CMake Error at …:` does)."""
    lines = [_STEP_PREFIX.sub("", line).rstrip() for line in lines]
    for at in range(len(lines) - 1, -1, -1):
        if failed := _STEP_FAILED.match(lines[at]):
            # cmake's own progress (`-- Looking for x - not found`) is not a cause; a compiler's error is.
            output = [line for line in lines[:at] if line.strip() and not line.startswith(("stackbuild: ", "#", "-- "))]
            strong = (n for n, line in enumerate(output) if _STRONG_CAUSE.search(line))
            first = next(strong, next((n for n, line in enumerate(output) if _CAUSE.search(line)), None))
            if first is None:
                return failed.group(1)
            why = output[first].strip()
            if why.endswith(":") and first + 1 < len(output):
                why = f"{why} {output[first + 1].strip()}"
            return f"{failed.group(1)}: {why[:200]}"
    return None


def _apt_reason(reasons: Sequence[str]) -> str | None:
    """dpkg's first failed package with the line saying why, else apt's first unmet dependency, else its error."""
    for i, line in enumerate(reasons):
        if failed := _DPKG_ERROR.match(line):
            package = failed.group(1) or failed.group(2).rsplit("/", 1)[-1].split("_", 1)[0]
            why = reasons[i + 1].strip() if i + 1 < len(reasons) and reasons[i + 1].startswith(" ") else line
            return f"cannot install system package {package.split(':', 1)[0]}: {why}"
    for line in reasons:
        if unmet := _UNMET.match(line):
            return f"cannot install system package {unmet.group(1)}: {unmet.group(2)}"
    for line in reasons:
        if line.startswith("dpkg: error: "):  # dpkg itself failed (a full disk, a damaged database)
            return f"cannot install system packages: {line.removeprefix('dpkg: error: ')}"
    errors = [line.removeprefix("E: ") for line in reasons if line.startswith("E: ")]
    return f"cannot install system packages: {errors[0]}" if errors else None
