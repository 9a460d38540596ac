"""Where things live in the images and on an Ascend host (shared/ascend-facts.md)."""

from __future__ import annotations

TOOLKIT_ROOT = "/usr/local/Ascend/ascend-toolkit"
TOOLKIT_HOME = f"{TOOLKIT_ROOT}/latest"
STACK_ROOT = "/opt/stack"
DRIVER_LIB64 = "/usr/local/Ascend/driver/lib64"
# What CANN's set_env.sh exports, baked into ENV (cann-container-image does the same); the
# driver paths are for the host's driver mounted at run time.
TOOLKIT_ENV: tuple[tuple[str, str], ...] = (
    ("ASCEND_TOOLKIT_HOME", TOOLKIT_HOME),
    ("ASCEND_HOME_PATH", TOOLKIT_HOME),
    ("ASCEND_OPP_PATH", f"{TOOLKIT_HOME}/opp"),
    ("ASCEND_AICPU_PATH", TOOLKIT_HOME),
    (
        "LD_LIBRARY_PATH",
        f"{TOOLKIT_HOME}/lib64:{DRIVER_LIB64}:{DRIVER_LIB64}/common:{DRIVER_LIB64}/driver",
    ),
    ("PATH", f"{TOOLKIT_HOME}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
    ("CMAKE_PREFIX_PATH", TOOLKIT_HOME),
)
# Device nodes and driver files an Ascend container needs (cann-container-image README);
# the driver stays on the host and is mounted read-only.
NPU_DEVICE_GLOB = "/dev/davinci*"
CONTROL_DEVICES = ("/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc")
DRIVER_MOUNTS = (
    "/usr/local/dcmi",
    "/usr/local/bin/npu-smi",
    "/usr/local/Ascend/driver/lib64/",
    "/usr/local/Ascend/driver/version.info",
    "/etc/ascend_install.info",
)


def stack_dir(component: str) -> str:
    return f"{STACK_ROOT}/{component}"
