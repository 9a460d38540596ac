"""Host setup: install the host tools stackbuild and its tests need, saying what it does.

Run as `python -m builder.hostsetup` (nox sessions call it). It only installs what is
missing, with apt-get on Debian/Ubuntu as root, and prints each action; elsewhere it
names the missing tools and exits non-zero instead of guessing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

# command -> Debian package providing it
BUILD_TOOLS = {"cc": "gcc", "make": "make", "cmake": "cmake", "git": "git", "objcopy": "binutils"}


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
    say(f"installing {', '.join(packages)} with apt-get")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages], check=True, env=env)


def ensure_commands(commands: dict[str, str]) -> None:
    missing = sorted({pkg for cmd, pkg in commands.items() if not shutil.which(cmd)})
    if missing:
        apt_install(missing)
    else:
        say(f"found {', '.join(commands)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m builder.hostsetup", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.parse_args(argv)
    try:
        ensure_commands(BUILD_TOOLS)
    except (SetupError, subprocess.CalledProcessError) as err:
        print(f"[host-setup] error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
