"""Host setup: install the host tools stackbuild and its tests need, saying what it does.

`python -m builder.hostsetup` checks the build tools (gcc, make, cmake, git, binutils, openssl);
`--docker` also mmdebstrap and docker.io, and starts dockerd if no engine answers;
`--registry` Debian's docker-registry (the tests push to one on loopback); `--foreign ARCH`
what building another architecture under emulation needs (qemu-user-static, binfmt-support,
arch-test, binfmt_misc mounted, that architecture's handler enabled). nox sessions call it. It
installs only what is missing, with apt-get on Debian/Ubuntu as root, printing each action;
elsewhere it names what is missing and exits non-zero.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

# Standard library only below it: the setup runs before the project's dependencies are installed.
from builder.model.arch import ARCHITECTURES, Arch

# command -> Debian package providing it
# openssl verifies signed catalog zips as ascend-deployer does (builder/inputs/signed.py).
BUILD_TOOLS = {"cc": "gcc", "make": "make", "cmake": "cmake", "git": "git", "objcopy": "binutils", "openssl": "openssl"}
DOCKER_TOOLS = {"dockerd": "docker.io", "mmdebstrap": "mmdebstrap"}
REGISTRY_TOOLS = {"docker-registry": "docker-registry", "skopeo": "skopeo"}  # skopeo: tests read what was pushed
FOREIGN_TOOLS = {
    "qemu-aarch64-static": "qemu-user-static",
    "update-binfmts": "binfmt-support",
    "arch-test": "arch-test",
}
BINFMT = Path("/proc/sys/fs/binfmt_misc")
DOCKER_SOCKET = Path("/var/run/docker.sock")
DOCKERD_LOG = Path("/var/log/stackbuild-dockerd.log")
APT_LOG = Path("/var/log/stackbuild-apt.log")


class SetupError(Exception):
    pass


def say(message: str) -> None:
    print(f"[host-setup] {message}", flush=True)


def apt_install(packages: list[str]) -> None:
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise SetupError(
            f"missing host packages {', '.join(packages)}: install them (apt-get install -y {' '.join(packages)}) "
            "or run this setup as root on Debian/Ubuntu"
        )
    say(f"installing {', '.join(packages)} with apt-get (its output kept in {APT_LOG}, shown if it fails)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    with APT_LOG.open("a") as log:
        for command in (["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", *packages]):
            log.write(f"$ {' '.join(command)}\n")
            log.flush()
            # dpkg's progress and a package's own service start (a host whose policy-rc.d denies it says
            # `invoke-rc.d: policy-rc.d denied execution of start.`; dockerd is started below) are not ours to print.
            done = subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            if done.returncode != 0:
                tail = APT_LOG.read_text(errors="replace").splitlines()[-15:]
                raise SetupError(f"`{' '.join(command)}` failed (exit code {done.returncode}):\n" + "\n".join(tail))


def ensure_commands(commands: dict[str, str]) -> None:
    missing = sorted({pkg for cmd, pkg in commands.items() if not shutil.which(cmd)})
    if missing:
        apt_install(missing)
    else:
        say(f"found {', '.join(commands)}")


def ensure_foreign(arch: str) -> None:
    """Emulation for arch: its packages installed, binfmt_misc mounted and that architecture's handler
    enabled, then arch-test's word that binaries of arch run here. Only that handler: the Docker
    daemon's BuildKit starts every enabled emulator once per build to learn what it can run (about
    0.3 s a build on 2 cores with qemu-user-static's 29, bench/RESULTS.md)."""
    ensure_commands(FOREIGN_TOOLS)
    if not (BINFMT / "status").exists():
        if os.geteuid() != 0:
            raise SetupError(f"binfmt_misc is not mounted: as root, mount -t binfmt_misc binfmt_misc {BINFMT}")
        say(f"mounting binfmt_misc on {BINFMT}")
        subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)], check=True)
    handler = BINFMT / f"qemu-{Arch(arch).value}"  # the name qemu-user-static gives it (/usr/share/binfmts)
    if not handler.exists():
        say(f"enabling the {handler.name} binfmt handler")
        subprocess.run(["update-binfmts", "--enable", handler.name], check=False, capture_output=True)
    elif handler.read_text().startswith("disabled"):  # registered but switched off: update-binfmts leaves it so
        say(f"switching the {handler.name} binfmt handler on")
        handler.write_text("1")
    debian = Arch(arch).debian
    if subprocess.run(["arch-test", debian], capture_output=True).returncode != 0:
        raise SetupError(f"{arch} binaries do not run here even with qemu-user-static: see `arch-test {debian}`")
    say(f"{arch} runs here under emulation (qemu-user-static)")


def docker_running() -> bool:
    # Imported here: the build-tools check runs before the project's dependencies are installed.
    from builder.engine.docker_daemon import reachable

    return reachable()


def ensure_docker() -> None:
    """A running Docker engine: installed and started here if missing."""
    ensure_commands(DOCKER_TOOLS)
    if os.environ.get("DOCKER_HOST") or docker_running():
        say("Docker engine reachable")
        return
    if os.geteuid() != 0:
        raise SetupError("no Docker engine is running and starting one needs root: start dockerd, then retry")
    say(f"starting dockerd (log: {DOCKERD_LOG})")
    with DOCKERD_LOG.open("ab") as log:
        subprocess.Popen(["dockerd"], stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while not docker_running():
        if time.monotonic() > deadline:
            raise SetupError(f"dockerd did not come up within 60 s: see {DOCKERD_LOG}")
        time.sleep(0.5)
    say(
        "Docker engine started: dockerd in the background, not a service, so it is gone after a reboot (run this "
        "setup again, or `systemctl enable --now docker` where systemd runs)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m builder.hostsetup", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docker", action="store_true", help="also install mmdebstrap and start the Docker engine")
    parser.add_argument(
        "--registry", action="store_true", help="also install docker-registry (the tests run one on loopback)"
    )
    parser.add_argument(
        "--foreign",
        action="append",
        choices=ARCHITECTURES,
        default=[],
        help="also what building this architecture under emulation needs (repeatable)",
    )
    args = parser.parse_args(argv)
    try:
        ensure_commands(BUILD_TOOLS)
        if args.registry:
            ensure_commands(REGISTRY_TOOLS)
        for arch in args.foreign:
            if Arch(arch) != Arch.host():
                ensure_foreign(arch)
        if args.docker:
            ensure_docker()
    except (SetupError, subprocess.CalledProcessError, OSError) as err:
        print(f"[host-setup] error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
