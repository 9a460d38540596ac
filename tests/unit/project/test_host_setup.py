"""The host setup's own lines (builder.hostsetup): apt-get's and dpkg's output goes to a log, shown
only when the install fails, so a first run does not read like Docker failing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from builder import hostsetup

NOISE = "(Reading database ... 5%\ninvoke-rc.d: policy-rc.d denied execution of start.\n"


def _apt_get(tmp_path: Path, code: int) -> None:
    """An apt-get on PATH that prints what dpkg prints during an install, then exits with code."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "apt-get").write_text(f"#!/bin/sh\ncat <<'EOF'\n{NOISE}EOF\nexit {code}\n")
    (bin_dir / "apt-get").chmod(0o755)


@pytest.mark.skipif(os.geteuid() != 0, reason="the setup installs only as root")
def test_apt_output_goes_to_its_log_and_is_shown_only_when_it_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(hostsetup, "APT_LOG", tmp_path / "apt.log")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    _apt_get(tmp_path, 0)
    hostsetup.apt_install(["docker.io"])
    out, err = capfd.readouterr()
    said = f"installing docker.io with apt-get (its output kept in {tmp_path / 'apt.log'}, shown if it fails)"
    assert out == f"[host-setup] {said}\n"
    assert err == "" and "policy-rc.d denied" in (tmp_path / "apt.log").read_text()
    _apt_get(tmp_path, 100)
    with pytest.raises(hostsetup.SetupError, match=r"(?s)`apt-get update` failed \(exit code 100\):.*Reading database"):
        hostsetup.apt_install(["docker.io"])
