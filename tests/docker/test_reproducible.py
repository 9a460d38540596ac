"""Bit for bit: a small stack (tests/emu) built twice from nothing, the second time from a copy of
the checkout elsewhere (files touched, another umask and time zone) on another daemon, gives the
same image for every stage and the same registry digests; a component that writes the time does
not, and is named with its file. (The reference stack's run is measured outside CI: README.)"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest

from tests.docker.conftest import SecondDaemon, emu_workspace, stackbuild
from tests.helpers import registry

pytestmark = pytest.mark.docker
HELLO_BUILD = "    build: [python3 make_launcher.py]\n"
RANDOM_MTIME = 'touch -d "@$(( $(date +%s) - RANDOM ))" launch.py'  # another mtime each build


def verdicts(stdout: str) -> dict[str, str]:
    return dict((m[1], m[0]) for m in re.findall(r"^(same|differs)\s+(\S+)\s+sha256:", stdout, re.M))


def test_two_builds_from_nothing_give_the_same_images_and_registry_digests(tmp_path: Path) -> None:
    root = emu_workspace(tmp_path)
    daemon = SecondDaemon(Path(tempfile.mkdtemp(prefix="sb-r-", dir="/tmp")))
    daemon.start()
    try:
        with registry(tmp_path / "registry") as address:
            run = stackbuild(
                root, "verify-reproducible", "emu", "--arch", "x86_64",
                "--second-engine", daemon.host, "--registry", f"{address}/verify", timeout=2400,
            )  # fmt: skip
    finally:
        daemon.remove()
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    stages = {"base-devel", "base-runtime", "toolkit", "hello", "devel-image", "runtime-image"}
    assert verdicts(run.stdout) == dict.fromkeys(stages, "same")
    assert len(re.findall(r"^same\s+\S+\s+registry digest sha256:", run.stdout, re.M)) == len(stages)
    assert "6 of 6 stages give the same image both times" in run.stderr


def test_a_component_writing_the_time_differs_by_name_and_one_differing_in_mtimes_does_not(tmp_path: Path) -> None:
    clock = (
        "  - id: clock\n    source: {path: emu/hello}\n"
        "    build: ['date +%s%N > stamp.txt']\n    artifacts:\n      - {path: stamp.txt}\n"
    )
    root = emu_workspace(
        tmp_path,
        replacements=(
            # hello's launch.py gets another mtime each build: clamped to the source date, it is the same
            (HELLO_BUILD, f"    build: [python3 make_launcher.py, '{RANDOM_MTIME}']\n"),
            ("smoke:\n", clock + "smoke:\n"),
        ),
    )
    run = stackbuild(root, "verify-reproducible", "emu", "--arch", "x86_64", timeout=2400)
    assert run.returncode == 1, run.stdout + run.stderr[-3000:]
    found = verdicts(run.stdout)
    assert found["hello"] == "same" and found["clock"] == "differs", run.stdout
    assert re.search(r"^\s+layer \d+: opt/stack/clock/stamp.txt: content$", run.stdout, re.M), run.stdout
    assert "launch.py" not in run.stdout
