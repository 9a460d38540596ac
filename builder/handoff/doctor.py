"""`stackbuild doctor [STACK]`: whether this host can build and run a stack, one check at a time, each
failure with a one-line remedy. The Ascend checks read a root (`/`, or a test tree standing in for
/dev, /usr/local/Ascend and /etc: STACKBUILD_HOST_ROOT), with the facts of shared/ascend-facts.md:
driver and firmware version.info, the device nodes, the driver's HwHiAiUser, the kernel headers a
driver (re)install builds its module against."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal, Protocol

from builder.engine import Engine, EngineError, EngineFacts, EngineUnavailable
from builder.handoff.contents import Contents
from builder.manifest.model import Manifest, RunUser
from builder.model.arch import Arch
from builder.model.layout import ASCEND_ROOT, CONTROL_DEVICES
from builder.verify.cdi import CDI_DOCKER, npu_devices
from builder.verify.host import ASCEND_RUNTIME, DRIVER_USER, host_ids, npu_group, npus

Verdict = Literal["ok", "warn", "fail", "skip"]
BINFMT = Path("/proc/sys/fs/binfmt_misc")
GB = 1e9


@dataclass(frozen=True)
class Check:
    name: str
    verdict: Verdict
    detail: str
    remedy: str = ""

    def as_json(self) -> dict[str, str]:
        return asdict(self)


class Reachable(Protocol):
    def reach(self, repository: str) -> None: ...


def engine_check(connect: Callable[[], Engine]) -> tuple[Check, EngineFacts | None]:
    try:
        about = connect().about()
    except EngineUnavailable as err:
        return Check("engine", "fail", err.problem, err.remedy), None
    machine = about.arch or "a machine stackbuild builds none of"
    detail = (
        f"{about.product} {about.version} (API {about.api_version}) on {machine}, "
        f"{about.storage_driver}, {about.builder}"
    )
    return Check("engine", "ok", detail), about


def runtime_check(about: EngineFacts | None) -> Check:
    """How `run` and `shell` give a container the NPUs: the Ascend Docker Runtime where the engine has it."""
    if about is None:
        return Check("runtime", "skip", "no engine to ask")
    if ASCEND_RUNTIME in about.runtimes:
        return Check("runtime", "ok", "the Ascend Docker Runtime: run gives it ASCEND_VISIBLE_DEVICES")
    return Check("runtime", "ok", f"{', '.join(about.runtimes) or 'the default'}: run gives device nodes and paths")


@dataclass(frozen=True)
class Certified:
    """What a host's NPU side is checked against: the stack's certified driver and firmware and its
    chip (the driver package's name), from its manifest or from an image it built (its labels and lock)."""

    name: str
    driver: str | None  # "none": a CPU stack, any host runs it
    firmware: str | None
    chip: str
    user: RunUser | None = None  # who its images run as (None: root)

    @classmethod
    def of_manifest(cls, manifest: Manifest) -> Certified:
        host = manifest.host
        return cls(manifest.name, host.driver, host.firmware, manifest.toolkit.chip, manifest.run_user)

    @classmethod
    def of_image(cls, contents: Contents) -> Certified:
        certified = contents.describe()["certified_host"]
        lock = contents.lock
        return cls(lock.stack, certified["driver"], certified["firmware"], lock.toolkit.chip, contents.run_user())


def disk_checks(places: Mapping[str, Path], need_gb: float, subject: str) -> list[Check]:
    """Free space where images and cached inputs go: warn below what a build of subject takes."""
    checks = []
    for what, path in places.items():
        existing = next((p for p in (path, *path.parents) if p.exists()), Path("/"))
        free = shutil.disk_usage(existing).free / GB
        detail = f"{free:.1f} GB free for {what} at {_short(path)}, {need_gb:.0f} GB for {subject}"
        verdict: Verdict = "ok" if free >= need_gb else "warn" if free >= need_gb / 4 else "fail"
        remedy = "" if verdict == "ok" else f"`stackbuild gc`, or free space under {_short(existing)}"
        checks.append(Check("disk", verdict, detail, remedy))
    return checks


def _short(path: Path) -> str:
    """path in at most 24 characters (its end): a doctor's line fits 100 columns."""
    return str(path) if len(str(path)) <= 24 else f"…{str(path)[-23:]}"


def binfmt_checks(manifest: Manifest | None, binfmt: Path = BINFMT) -> list[Check]:
    host = Arch.host()
    foreign = [a for a in (manifest.platform.architectures if manifest else []) if a != host]
    if not foreign:
        return [Check("binfmt", "skip", f"no architecture but this host's ({host}) to build")]
    checks = []
    for arch in foreign:
        handler = binfmt / f"qemu-{arch.value}"
        enabled = handler.is_file() and handler.read_text().startswith("enabled")
        # Both lines fit 100 columns under doctor's check and fix columns.
        detail = f"{arch} emulation: {handler} {'enabled' if enabled else 'missing or off'}"
        fix = "" if enabled else f"python -m builder.hostsetup --foreign {arch} (installs qemu-user-static)"
        checks.append(Check("binfmt", "ok" if enabled else "fail", detail, fix))
    return checks


def registry_check(where: str | None, client: Callable[[str], Reachable]) -> Check:
    if not where:
        return Check("registry", "skip", "no cache_registry in the site configuration: stages are not shared")
    host, _, repository = where.partition("/")
    try:
        client(host).reach(repository)
    except EngineError as err:
        login = "docker login" in str(err)
        fix = f"docker login {host}" if login else f"check that {host} runs and is reachable (site: cache_registry)"
        return Check("registry", "fail", str(err).split(": `docker login")[0], fix)
    return Check("registry", "ok", f"{where} answers and takes this host's credentials")


def version_info(path: Path) -> dict[str, str]:
    """A CANN version.info (key=value lines); empty when absent."""
    if not path.is_file():
        return {}
    pairs = (line.partition("=") for line in path.read_text(errors="replace").splitlines())
    return {key.strip(): value.strip() for key, sep, value in pairs if sep}


def _driver_file(version: str, stack: Certified, arch: Arch) -> str:
    """The driver package's name as Huawei spells it (the x86 one says x86-64)."""
    machine = "x86-64" if arch == Arch.X86_64 else arch.value
    return f"Ascend-hdk-{stack.chip}-npu-driver_{version}_linux-{machine}.run"


def driver_check(root: Path, stack: Certified | None) -> Check:
    path = root / ASCEND_ROOT.lstrip("/") / "driver" / "version.info"
    found = version_info(path).get("Version")
    certified = stack.driver if stack else None
    if found is None:
        package = _driver_file(certified, stack, Arch.host()) if stack and certified else "its package"
        fix = f"install the NPU driver ({package} --full)"
        return Check("driver", "fail", f"no driver: {ASCEND_ROOT}/driver/version.info is missing", fix)
    if stack is None or certified is None or certified == "none":
        return Check("driver", "ok", f"driver {found} (no stack, or a CPU stack: any driver)")
    if found.lower() != certified.lower():
        fix = f"install {_driver_file(certified, stack, Arch.host())}, or use a stack certified for driver {found}"
        return Check("driver", "fail", f"driver {found} installed, {stack.name} is certified for {certified}", fix)
    return Check("driver", "ok", f"driver {found}, as {stack.name} is certified for")


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version)[:3])


def firmware_check(root: Path, stack: Certified | None) -> Check:
    ascend = root / ASCEND_ROOT.lstrip("/")
    found = version_info(ascend / "firmware" / "version.info").get("Version")
    if found is None:
        return Check(
            "firmware",
            "fail",
            f"no firmware: {ASCEND_ROOT}/firmware/version.info is missing",
            "install the NPU firmware (Ascend-hdk-<chip>-npu-firmware_<ver>.run) after the driver",
        )
    certified = stack.firmware if stack else None
    if stack is not None and certified:
        if found.lower() != certified.lower():
            fix = f"install firmware {certified}, or use a stack certified for firmware {found}"
            return Check(
                "firmware", "fail", f"firmware {found} installed, {stack.name} is certified for {certified}", fix
            )
        return Check("firmware", "ok", f"firmware {found}, as {stack.name} is certified for")
    # No certified firmware: the driver says which firmware it works with, e.g. [7.0.0,8.9.9].
    bounds = version_info(ascend / "driver" / "version.info").get("compatible_version_fw", "").strip("[]").split(",")
    if len(bounds) == 2 and not _numbers(bounds[0]) <= _numbers(found) <= _numbers(bounds[1]):
        fix = f"install a firmware between {bounds[0]} and {bounds[1]}"
        return Check(
            "firmware", "fail", f"firmware {found} is outside the driver's range [{bounds[0]}, {bounds[1]}]", fix
        )
    return Check("firmware", "ok", f"firmware {found} (the driver's range allows it)")


def device_check(root: Path, present: Mapping[int, str]) -> Check:
    nodes = [*present.values(), *CONTROL_DEVICES]
    missing = [n for n in nodes if not (root / n.lstrip("/")).exists()]
    if missing:
        return Check(
            "devices",
            "fail",
            f"missing {', '.join(missing)}: the driver is not loaded",
            "reload the driver (reboot after installing it), then check `npu-smi info`",
        )
    closed = [n for n in nodes if not os.access(root / n.lstrip("/"), os.R_OK | os.W_OK)]
    if closed:
        return Check(
            "devices",
            "fail",
            f"{', '.join(closed)} not readable and writable by this user",
            f"run as root, or give the {DRIVER_USER} group the devices (a udev rule, e.g. "
            f'KERNEL=="davinci*", GROUP="{DRIVER_USER}", MODE="0660") and join it',
        )
    return Check("devices", "ok", f"{', '.join(nodes)} present and accessible")


def _names(path: Path) -> set[str]:
    lines = path.read_text(errors="replace").splitlines() if path.is_file() else []
    return {line.split(":", 1)[0] for line in lines if line}


def driver_user_check(root: Path) -> Check:
    users, groups = _names(root / "etc" / "passwd"), _names(root / "etc" / "group")
    if DRIVER_USER in users and DRIVER_USER in groups:
        return Check("driver user", "ok", f"user and group {DRIVER_USER} exist")
    fix = f"groupadd {DRIVER_USER} && useradd -g {DRIVER_USER} -d /home/{DRIVER_USER} -m {DRIVER_USER} -s /bin/bash"
    return Check("driver user", "fail", f"no user or group {DRIVER_USER}: the driver installer needs them", fix)


def run_user_check(root: Path, user: RunUser) -> Check:
    """The images' run user against the host's driver user: the same IDs, or what differs and what `run`
    does about it (the NPU group added), with the manifest line that matches this host."""
    uid, gid = host_ids(root, DRIVER_USER)
    theirs = f"{user.name} {user.uid}:{user.gid}"
    if uid is None or gid is None:
        detail = f"the images run as {theirs}; this host has no {DRIVER_USER} to compare with"
        return Check("image user", "warn", detail, "install the NPU driver (it runs as HwHiAiUser), then check again")
    if (uid, gid) == (user.uid, user.gid):
        return Check("image user", "ok", f"the images run as {theirs}, this host's {DRIVER_USER} IDs")
    group = npu_group(root)
    opens = f"`run` adds group {group[0]} so the NPUs open" if group else "no NPU group to add: the NPUs are root's"
    detail = f"the images run as {theirs}, this host's {DRIVER_USER} is {uid}:{gid}: {opens}"
    fix = f"to match, build with user: {{name: {user.name}, uid: {uid}, gid: {gid}}}"
    return Check("image user", "warn", detail, fix)


def kernel_headers_check(root: Path) -> Check:
    release = os.uname().release
    if (root / "lib" / "modules" / release / "build").exists():
        return Check("kernel headers", "ok", f"headers for the running kernel {release}")
    detail = f"no headers for the running kernel {release}: a driver (re)install fails with 'bad return status "
    detail += "for module build on kernel'"
    return Check(
        "kernel headers",
        "warn",
        detail,
        f"apt-get install linux-headers-{release} (openEuler: yum install kernel-devel-{release})",
    )


def host_checks(root: Path, stack: Certified | None) -> list[Check]:
    present = npus(root)
    simulated = stack is not None and stack.driver == "none"
    if not present and version_info(root / ASCEND_ROOT.lstrip("/") / "driver" / "version.info"):
        detail = "the NPU driver is installed but no /dev/davinci<N> exists: it is not loaded"
        return [Check("npu", "fail", detail, "reboot after installing the driver, then check `npu-smi info`")]
    if not present:
        detail = "no NPU on this host (no /dev/davinci<N>)"
        if stack is None or simulated:
            which = f", as {stack.name} is" if stack else ""
            return [Check("npu", "ok", f"{detail}: CPU stacks run here{which}")]
        fix = f"run {stack.name} on an Ascend host with driver {stack.driver} (building works here)"
        return [Check("npu", "fail", f"{detail}: {stack.name} runs its kernels on one", fix)]
    found = Check("npu", "ok", f"{len(present)} NPU(s): {', '.join(present.values())}")
    return [
        found,
        device_check(root, present),
        driver_check(root, stack),
        firmware_check(root, stack),
        driver_user_check(root),
        *([run_user_check(root, stack.user)] if stack and stack.user else []),  # root's images: nothing to match
        kernel_headers_check(root),
        cdi_check(root),
    ]


def cdi_check(root: Path) -> Check:
    """Whether a CDI spec names the NPUs: the form `run --print --format cdi` gives, for another engine."""
    devices = npu_devices(root)
    if not devices:
        return Check("cdi", "ok", "no CDI spec names the NPUs (run gives device nodes, or the Ascend Docker Runtime)")
    specs = ", ".join(sorted({d.spec for d in devices}))
    names = ", ".join(d.qualified for d in devices)
    return Check("cdi", "ok", f"{names} ({specs}): `run --print --format cdi` for {CDI_DOCKER}")
