"""Known failures of the Ascend stack (shared/ascend-facts.md): output pattern -> cause and fix."""

from __future__ import annotations

import re
from collections.abc import Iterable

KNOWN_FAILURES: tuple[tuple[str, str], ...] = (
    (
        r"toolkit version mismatch",
        "the package installed a different CANN version than the lock pins: the file does not hold what its name "
        "says; re-download it or relock with the right package",
    ),
    (
        r"needs toolkit \S+ but ASCEND_TOOLKIT_HOME has",
        "a layer pins another CANN version than the toolkit (versions not pinned together): align them in the manifest",
    ),
    (
        r"ASCEND_TOOLKIT_HOME is not set|find_package\((CANN|ASCENDCL|HCCL)\)|ASCENDCL not found",
        "toolkit not installed or set_env.sh not sourced, or a hard-coded /usr/local/Ascend: the stage must use the "
        "toolkit's ENV",
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
