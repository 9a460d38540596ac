"""A plug-in installed as pip installs one, for the tests that add a kind: the distribution's
metadata naming its entry point, on a path a stackbuild process started here imports from. The
kinds are read once a process, so each command runs in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def install(site: Path, group: str, name: str, target: str) -> None:
    """The metadata an installed distribution with the kind `name` at target would have."""
    info = site / f"stackbuild_{name}-1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: stackbuild-{name}\nVersion: 1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{name} = {target}\n")


def stackbuild(tmp_path: Path, *args: str, plugin: bool = True) -> subprocess.CompletedProcess[str]:
    """stackbuild on the project under tmp_path, with the plug-ins installed in tmp_path/site (or
    without them), its own cache and an empty site configuration."""
    paths = [str(tmp_path / "site")] if plugin else []
    (tmp_path / "empty-site.yaml").write_text("{}\n")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([*paths, str(ROOT)]),
        "STACKBUILD_CACHE": str(tmp_path / "cache"),
        "STACKBUILD_SITE_CONFIG": str(tmp_path / "empty-site.yaml"),
    }
    command = [sys.executable, "-m", "builder", "--root", str(tmp_path / "project"), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
