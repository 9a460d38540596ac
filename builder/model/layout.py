"""Where things live in the images and on an Ascend host (shared/ascend-facts.md).

CANN's install layout changed with 8.5.0 (ascend-deployer's install_cann.py treats it as the
first "new toolkit"): `toolkit_layout(version)` is the one table render, probes, the smoke and
the runtime image read it from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ASCEND_ROOT = "/usr/local/Ascend"
STACK_ROOT = "/opt/stack"
# The first release installing cann-<ver>/ with a `cann` link and cann/set_env.sh.
NEW_LAYOUT_SINCE = (8, 5)


@dataclass(frozen=True)
class ToolkitLayout:
    """Where one CANN release's toolkit lives once installed as root."""

    name: str  # "ascend-toolkit" (up to 8.3) or "cann" (8.5.0 and later)
    install_dir: str  # the real directory the installer writes
    home: str  # the stable link to it: ASCEND_TOOLKIT_HOME
    link_target: str  # what `home` points at (relative, as the installer makes it)
    set_env: str  # the script users source

    def env_scripts(self) -> tuple[tuple[str, bool], ...]:
        """The environment scripts a release installs, in the order the official images source them
        (Ascend/cann-container-image cann/8.5.0-910b-ubuntu22.04-py3.10/Dockerfile, its ENTRYPOINT):
        (path, whether every install has it). The toolkit's own always; ascendnpu-ir's (8.5.0 and
        later) and NNAL's where they are installed. The environment baked into the images is exactly
        what these set, and the images' entrypoint sources them again at run time."""
        optional = (f"{self.install_dir}/share/info/ascendnpu-ir/bin/set_env.sh",) if self.name == "cann" else ()
        return (
            (self.set_env, True),
            *((path, False) for path in optional),
            (f"{ASCEND_ROOT}/nnal/atb/set_env.sh", False),
        )


def toolkit_layout(version: str) -> ToolkitLayout:
    """The layout a CANN version installs (8.3.RC1 -> ascend-toolkit/8.3.RC1, 8.5.0 -> cann-8.5.0)."""
    found = re.match(r"^(\d+)\.(\d+)", version)
    if found is None:
        raise ValueError(f"not a CANN version: {version}")
    if (int(found[1]), int(found[2])) >= NEW_LAYOUT_SINCE:
        return ToolkitLayout(
            name="cann",
            install_dir=f"{ASCEND_ROOT}/cann-{version}",
            home=f"{ASCEND_ROOT}/cann",
            link_target=f"cann-{version}",
            set_env=f"{ASCEND_ROOT}/cann/set_env.sh",
        )
    root = f"{ASCEND_ROOT}/ascend-toolkit"
    return ToolkitLayout(
        name="ascend-toolkit",
        install_dir=f"{root}/{version}",
        home=f"{root}/latest",
        link_target=version,
        set_env=f"{root}/set_env.sh",
    )


# Device nodes and driver files an Ascend container needs (cann-container-image README);
# the driver stays on the host and is mounted read-only.
CONTROL_DEVICES = ("/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc")
DRIVER_MOUNTS = (
    "/usr/local/dcmi",
    "/usr/local/bin/npu-smi",
    "/usr/local/Ascend/driver/lib64/",
    "/usr/local/Ascend/driver/version.info",
    "/etc/ascend_install.info",
)
# Libraries an image may need that only the host's driver provides, under the driver paths set_env.sh
# adds (driver/lib64, lib64/common, lib64/driver): libascend_hal.so, which CANN's set_env.sh looks for
# to tell whether a driver is there (hicann/runtime v8.5.0 scripts/package/runtime/set_env.sh l.87-110).
# The runtime image's closure probe allows these, and only these, to be missing.
DRIVER_LIBRARIES = ("libascend_hal.so",)


def stack_dir(component: str) -> str:
    return f"{STACK_ROOT}/{component}"
