"""`stackbuild devcontainer STACK`: .devcontainer/devcontainer.json for the devel image, read back by the
devcontainers CLI itself (@devcontainers/cli, pinned; it asks `docker ps` for a running container of the
folder, so a stub stands in for the client where no daemon runs)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from builder.cli.context import Context
from tests.conftest import ROOT, TEST_CACHE
from tests.fake_engine import FakeEngine
from tests.helpers import ascend_host, run_cli

CLI_VERSION = "0.89.0"


@pytest.fixture(scope="module")
def devcontainer_cli() -> Path:
    """The devcontainers CLI, installed once into the suite's cache from the npm registry."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("no node and npm here: the devcontainers CLI runs on Node >= 20")
    prefix = TEST_CACHE / f"devcontainers-cli-{CLI_VERSION}"
    cli = prefix / "node_modules" / ".bin" / "devcontainer"
    if not cli.exists():
        installed = subprocess.run(
            ["npm", "install", "--silent", "--prefix", str(prefix), f"@devcontainers/cli@{CLI_VERSION}"],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        if installed.returncode != 0:
            pytest.skip(f"the npm registry did not give @devcontainers/cli@{CLI_VERSION}: {installed.stderr[-300:]}")
    return cli


def read_configuration(cli: Path, folder: Path, tmp_path: Path) -> dict[str, Any]:
    stub = tmp_path / "docker"
    stub.write_text('#!/bin/sh\n[ "$1" = ps ] && exit 0  # no container of this folder runs\nexit 1\n')
    stub.chmod(0o755)
    read = subprocess.run(
        [str(cli), "read-configuration", "--workspace-folder", str(folder), "--docker-path", str(stub)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert read.returncode == 0, read.stderr[-2000:]
    configuration: dict[str, Any] = json.loads(read.stdout)["configuration"]
    return configuration


def test_the_devel_image_with_this_hosts_npus_is_what_the_devcontainers_cli_reads(
    devcontainer_cli: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STACKBUILD_HOST_ROOT", str(ascend_host(tmp_path / "host")))  # NPUs 0 and 1
    monkeypatch.setattr(Context, "engine", lambda *_: FakeEngine())  # no Ascend Docker Runtime
    folder = tmp_path / "work"
    code, _, err = run_cli(capsys, "--root", str(ROOT), "devcontainer", "reference", "--device", "1", "-o", str(folder))
    assert code == 0, err
    written = json.loads((folder / ".devcontainer" / "devcontainer.json").read_text())
    read = read_configuration(devcontainer_cli, folder, tmp_path)
    assert {key: read[key] for key in written} == written
    assert read["image"] == "stackbuild-test/reference:8.5.0-910b-debian12-py3.11-x86_64"
    assert read["runArgs"][:2] == ["--device", "/dev/davinci1"] and "/dev/davinci0" not in read["runArgs"]
    assert (
        "source=/usr/local/Ascend/driver/lib64,target=/usr/local/Ascend/driver/lib64,type=bind,readonly"
        in (read["mounts"])
    )
    assert read["workspaceFolder"] == "/opt/stack" and read["remoteUser"] == "root"


def test_the_devel_image_of_a_stack_with_a_run_user_is_used_as_that_user(
    devcontainer_cli: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """containerUser and remoteUser are the image's user, and the host's NPU group is added for it."""
    host = ascend_host(tmp_path / "host")
    (host / "etc" / "group").write_text("HwHiAiUser:x:1234:\n")
    monkeypatch.setenv("STACKBUILD_HOST_ROOT", str(host))
    monkeypatch.setattr(Context, "engine", lambda *_: FakeEngine())
    project = tmp_path / "project"
    shutil.copytree(ROOT / "stacks", project / "stacks", ignore=shutil.ignore_patterns("reference"))
    shutil.copytree(ROOT / "lockfiles", project / "lockfiles")
    stack = project / "stacks" / "8.5.0.yaml"
    stack.write_text(stack.read_text().replace("\nsmoke:", "\nuser: {name: HwHiAiUser, uid: 1000, gid: 1000}\nsmoke:"))
    folder = tmp_path / "work"
    code, _, err = run_cli(capsys, "--root", str(project), "devcontainer", "8.5.0", "-o", str(folder))
    assert code == 0, err
    read = read_configuration(devcontainer_cli, folder, tmp_path)
    assert (read["containerUser"], read["remoteUser"]) == ("HwHiAiUser", "HwHiAiUser")
    assert read["runArgs"][-2:] == ["--group-add", "1234"]
