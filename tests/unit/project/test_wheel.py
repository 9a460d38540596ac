"""The built wheel carries everything a render needs (the Dockerfile templates are package data)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from builder.cli import main
from builder.cli.configuration import cache_root
from tests.conftest import ROOT, TEST_PREFIX


def run(
    *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd, env=env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return result


def test_wheel_installed_outside_the_checkout_renders_the_reference_stack(tmp_path: Path) -> None:
    # Built from a copy, so no build/ or egg-info left in the checkout can add files to the wheel.
    source = tmp_path / "source"
    skip = shutil.ignore_patterns(
        ".git", ".nox", ".venv", "build", "*.egg-info", "__pycache__", ".stackbuild", "stacks"
    )
    shutil.copytree(ROOT, source, symlinks=True, ignore=skip)
    run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--quiet",
        "--no-deps",
        "--no-build-isolation",
        "-w",
        tmp_path / "dist",
        source,
    )
    wheel = next((tmp_path / "dist").glob("stackbuild-*.whl"))
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv)  # this pip installs into it (--python): faster
    run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        venv / "bin" / "python",
        "install",
        "-q",
        "--no-deps",
        "--no-index",
        wheel,
    )
    # The dependencies come from this environment's site-packages; stackbuild itself only from the wheel
    # (an editable install's .pth is not read from PYTHONPATH, and the working directory is elsewhere).
    # Both renders name images alike and read one cache: a base bootstrapped here since the lock (its
    # mirror moved on) is what each plans on, so a machine that built before renders the same from both.
    env = {
        "PYTHONPATH": sysconfig.get_paths()["purelib"],
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "STACKBUILD_CACHE": str(cache_root(os.environ)),
        "STACKBUILD_IMAGE_PREFIX": TEST_PREFIX,
    }
    where = run(venv / "bin" / "python", "-c", "import builder; print(builder.__file__)", cwd=tmp_path, env=env)
    assert where.stdout.startswith(str(venv)), where.stdout
    project = tmp_path / "project"
    shutil.copytree(
        ROOT / "stacks" / "reference",
        project / "stacks" / "reference",
        ignore=shutil.ignore_patterns("build", "__pycache__", "*.egg-info"),
    )
    shutil.copy(ROOT / "stacks" / "reference.yaml", project / "stacks")
    shutil.copytree(ROOT / "lockfiles", project / "lockfiles")
    out = tmp_path / "rendered"
    run(
        venv / "bin" / "stackbuild",
        "--root",
        project,
        "render",
        "reference",
        "--arch",
        "x86_64",
        "-o",
        out,
        cwd=tmp_path,
        env=env,
    )
    # The same project rendered by the checkout's code (not in git either: the images' source and
    # revision labels come from the project's checkout).
    assert (
        main(["--root", str(project), "render", "reference", "--arch", "x86_64", "-o", str(tmp_path / "checkout")]) == 0
    )
    rendered = {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*") if p.is_file()}
    assert len([name for name in rendered if name.endswith(".Dockerfile")]) == 10
    checkout = tmp_path / "checkout"
    assert rendered == {p.relative_to(checkout).as_posix(): p.read_text() for p in checkout.rglob("*") if p.is_file()}
