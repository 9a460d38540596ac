"""Installers run as root write the machine's /etc and /var/log (CANN's do: /etc/Ascend, /var/log/ascend_seclog):
in tests they run in a private mount namespace where those are overlaid by scratch directories."""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from pathlib import Path

OVERLAID = ("/etc", "/var/log")


def isolated(argv: list[str], scratch: Path | None = None, overlaid: tuple[str, ...] = OVERLAID) -> list[str]:
    """argv as a command whose writes under `overlaid` land in scratch (a new directory if None); as is
    when not root (the installers then write under $HOME) or without unshare."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return argv
    scratch = scratch or Path(tempfile.mkdtemp(prefix="isolated-"))
    mounts = []
    for target in overlaid:
        upper, work = scratch / f"upper{target.replace('/', '_')}", scratch / f"work{target.replace('/', '_')}"
        upper.mkdir(parents=True, exist_ok=True)
        work.mkdir(parents=True, exist_ok=True)
        mounts.append(f"mount -t overlay overlay -o lowerdir={target},upperdir={upper},workdir={work} {target}")
    script = " && ".join([*mounts, f"exec {shlex.join(argv)}"])
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]
