"""`stackbuild run --print` against a fake host tree standing in for /dev and /usr/local/Ascend:
exactly the flags of CANN's canonical docker run (ascend-facts: cann-container-image README), but
every host path read-only (issue 48: CANN's line mounts the driver writable into a root container)."""

from __future__ import annotations

import itertools
import os
import shlex
import sys
from pathlib import Path

import pytest

from builder.cli.context import Context
from builder.engine.docker_launch import DockerLauncher
from tests.fake_engine import FakeEngine
from tests.helpers import CDI_KIND, ascend_host, cdi_host, npu, run_cli

IMAGE = "stackbuild/reference:8.5.0-910b-debian12-py3.11-x86_64"
# The canonical flags for /dev/davinci0, in the facts' order.
CANONICAL = (
    "--device /dev/davinci0 --device /dev/davinci_manager --device /dev/devmm_svm --device /dev/hisi_hdc "
    "-v /usr/local/dcmi:/usr/local/dcmi:ro -v /usr/local/bin/npu-smi:/usr/local/bin/npu-smi:ro "
    "-v /usr/local/Ascend/driver/lib64/:/usr/local/Ascend/driver/lib64/:ro "
    "-v /usr/local/Ascend/driver/version.info:/usr/local/Ascend/driver/version.info:ro "
    "-v /etc/ascend_install.info:/etc/ascend_install.info:ro"
)


def writable_host_mounts(line: str) -> list[str]:
    """The host mounts of a docker run line that a container could write: -v/--volume without the ro
    option, --mount type=bind without readonly, as docker reads its flags."""
    words = shlex.split(line)
    writable = []
    for flag, value in itertools.pairwise(words):
        if flag in ("-v", "--volume"):
            options = value.split(":")[2].split(",") if value.count(":") >= 2 else []
            if "ro" not in options:
                writable.append(value)
        elif flag == "--mount":
            fields = dict(field.partition("=")[::2] for field in value.split(","))
            if fields.get("type") == "bind" and not {"readonly", "ro"} & fields.keys():
                writable.append(value)
    return writable


def test_run_print_mounts_no_host_path_writable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STACKBUILD_HOST_ROOT", str(ascend_host(tmp_path)))
    code, out, err = run_cli(capsys, "run", "--print", IMAGE, "--", "id")
    assert code == 0, err
    assert out.count(" -v ") == 5, out  # every driver path of the fake host is mounted
    assert writable_host_mounts(out) == []


def test_one_picked_npu_gives_exactly_the_canonical_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STACKBUILD_HOST_ROOT", str(ascend_host(tmp_path)))
    code, out, err = run_cli(capsys, "run", "--print", "--device", "0", IMAGE, "--", "npu-smi", "info")
    assert code == 0, err
    # -i: the test's standard input is no terminal, and what is printed is what would start here.
    assert out.strip() == f"docker run --rm -i {CANONICAL} {IMAGE} npu-smi info"
    assert err == ""


def test_every_npu_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STACKBUILD_HOST_ROOT", str(ascend_host(tmp_path)))
    code, out, _ = run_cli(capsys, "run", "--print", IMAGE)
    assert code == 0
    both = CANONICAL.replace("--device /dev/davinci0", "--device /dev/davinci0 --device /dev/davinci1")
    assert out.strip() == f"docker run --rm -i {both} {IMAGE}"


def test_no_npu_means_no_flags_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    host = ascend_host(tmp_path, npus=0)  # a driver tree but no device node
    monkeypatch.setenv("STACKBUILD_HOST_ROOT", str(host))
    code, out, err = run_cli(capsys, "run", "--print", IMAGE)
    assert code == 0
    assert out.strip() == f"docker run --rm -i {IMAGE}"
    assert "no NPU on this host" in err


def test_a_device_the_host_lacks_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STACKBUILD_HOST_ROOT", str(ascend_host(tmp_path)))
    code, out, err = run_cli(capsys, "run", "--print", "--device", "5", IMAGE)
    assert code == 2 and out == ""
    assert err.strip() == "stackbuild: error: --device 5: this host has no /dev/davinci5 (it has: 0, 1)"


def test_commands_piped_in_reach_the_container_and_a_terminal_gets_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`echo make | stackbuild shell STACK STAGE` ran nothing before: the container had no standard input."""
    monkeypatch.setenv("STACKBUILD_HOST_ROOT", str(tmp_path))  # no NPU
    started: list[list[str]] = []
    monkeypatch.setattr(DockerLauncher, "launch", lambda self, line: started.append(list(line)))
    run_cli(capsys, "run", IMAGE, "--", "bash")
    assert started[-1][:4] == ["docker", "run", "--rm", "-i"] and "-it" not in started[-1]
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    run_cli(capsys, "run", IMAGE, "--", "bash")
    assert started[-1][:4] == ["docker", "run", "--rm", "-it"]


def test_where_the_engine_has_the_ascend_runtime_run_gives_it_the_callers_visible_devices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """MindCluster's Ascend Docker Runtime adds the nodes and mounts the driver itself: `run` names it
    and ASCEND_VISIBLE_DEVICES (the caller's, else the picked NPUs, else all) instead of device flags."""
    monkeypatch.setenv("STACKBUILD_HOST_ROOT", str(ascend_host(tmp_path)))  # NPUs 0 and 1
    engine = FakeEngine(runtimes=("ascend", "runc"))
    monkeypatch.setattr(Context, "engine", lambda *_: engine)
    monkeypatch.setenv("ASCEND_VISIBLE_DEVICES", "1")
    out = run_cli(capsys, "run", "--print", IMAGE, "--", "npu-smi", "info")[1]
    assert out.strip() == f"docker run --rm -i --runtime ascend -e ASCEND_VISIBLE_DEVICES=1 {IMAGE} npu-smi info"
    monkeypatch.delenv("ASCEND_VISIBLE_DEVICES")
    assert "-e ASCEND_VISIBLE_DEVICES=0,1 " in run_cli(capsys, "run", "--print", IMAGE)[1]
    assert "-e ASCEND_VISIBLE_DEVICES=0 " in run_cli(capsys, "run", "--print", "--device", "0", IMAGE)[1]
    engine.runtimes = ("runc",)  # without it: the device form, as CANN's own lines give it
    assert run_cli(capsys, "run", "--print", "--device", "0", IMAGE)[1].strip() == (
        f"docker run --rm -i {CANONICAL} {IMAGE}"
    )
    monkeypatch.setenv("ASCEND_VISIBLE_DEVICES", "0;rm -rf /")
    engine.runtimes = ("ascend",)
    code, _, err = run_cli(capsys, "run", "--print", IMAGE)
    assert code == 2 and "ASCEND_VISIBLE_DEVICES='0;rm -rf /': say NPU numbers and ranges" in err


def test_where_a_cdi_spec_names_the_npus_print_offers_the_cdi_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Docker 25 or later runs `--device <kind>=<name>`; 20.10 cannot, so it is printed only."""
    root = ascend_host(tmp_path)  # NPUs 0 and 1
    cdi_host(root, [npu("0", 0), npu("1", 1)])
    monkeypatch.setenv("STACKBUILD_HOST_ROOT", str(root))
    monkeypatch.setattr(Context, "engine", lambda *_: FakeEngine(runtimes=("runc",)))
    code, out, err = run_cli(capsys, "run", "--print", IMAGE)
    assert (
        code == 0
        and out.strip()
        == f"docker run --rm -i {CANONICAL.replace('davinci0', 'davinci0 --device /dev/davinci1', 1)} {IMAGE}"
    )
    assert "a CDI spec names this host's NPUs (/etc/cdi/npus.json): `stackbuild run --print --format cdi`" in err
    code, out, err = run_cli(
        capsys, "run", "--print", "--format", "cdi", "--device", "1", IMAGE, "--", "npu-smi", "info"
    )
    assert code == 0 and out.strip() == f"docker run --rm -i --device {CDI_KIND}=1 {IMAGE} npu-smi info"
    assert "this line needs Docker 25 or later with CDI enabled" in err
    (root / "etc" / "group").write_text("HwHiAiUser:x:1234:\n")  # a user image opens the nodes through it
    line = run_cli(capsys, "run", "--print", "--format", "cdi", "--device", "0", IMAGE)[1].strip()
    assert line == f"docker run --rm -i --device {CDI_KIND}=0 --group-add 1234 {IMAGE}"
    code, _, err = run_cli(capsys, "run", "--format", "cdi", IMAGE)
    assert code == 2 and "--format cdi is a line for Docker 25 or later" in err


def test_run_adds_the_hosts_npu_group_so_an_image_running_as_a_user_opens_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The driver makes the nodes HwHiAiUser:HwHiAiUser 0660 (vllm-ascend#9490), whose GID is the host's
    own: the nodes' group, else (nodes root's) the host's HwHiAiUser group, given with --group-add."""
    host = ascend_host(tmp_path)
    monkeypatch.setenv("STACKBUILD_HOST_ROOT", str(host))
    (host / "etc" / "group").write_text("root:x:0:\nHwHiAiUser:x:\u00b2:\n")  # not a GID: never on the line
    assert "--group-add" not in run_cli(capsys, "run", "--print", "--device", "0", IMAGE)[1]
    (host / "etc" / "group").write_text("root:x:0:\nHwHiAiUser:x:1234:\n")
    line = run_cli(capsys, "run", "--print", "--device", "0", IMAGE)[1].strip()
    assert line == f"docker run --rm -i {CANONICAL} --group-add 1234 {IMAGE}"
    if os.geteuid() == 0:  # the nodes' own group, where it is not root's, wins
        for node in (host / "dev").iterdir():
            os.chown(node, -1, 1235)
        assert " --group-add 1235 " in run_cli(capsys, "run", "--print", IMAGE)[1]
    engine = FakeEngine(runtimes=("ascend",))  # the Ascend Docker Runtime makes the same nodes
    monkeypatch.setattr(Context, "engine", lambda *_: engine)
    assert " -e ASCEND_VISIBLE_DEVICES=0,1 --group-add " in run_cli(capsys, "run", "--print", IMAGE)[1]
    no_npu = ascend_host(tmp_path / "no-npu", npus=0)
    (no_npu / "etc" / "group").write_text("HwHiAiUser:x:1234:\n")
    monkeypatch.setenv("STACKBUILD_HOST_ROOT", str(no_npu))
    assert "--group-add" not in run_cli(capsys, "run", "--print", IMAGE)[1]  # nothing to open
