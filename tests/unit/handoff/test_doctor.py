"""`stackbuild doctor` over fake host trees: each check's verdict and remedy, and the exit code."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from builder.cli.context import Context
from builder.engine import EngineError, EngineFacts
from builder.handoff.contents import read_contents
from builder.handoff.doctor import (
    Certified,
    binfmt_checks,
    cdi_check,
    driver_check,
    firmware_check,
    host_checks,
    registry_check,
    run_user_check,
    runtime_check,
)
from builder.manifest import load
from builder.manifest.model import RunUser
from builder.model.arch import Arch
from builder.model.errors import StackbuildError
from builder.plan.labels import LOCK_IN_IMAGE
from tests.conftest import ROOT
from tests.fake_engine import FakeEngine
from tests.helpers import CDI_KIND, ascend_host, cdi_host, npu, run_cli

REAL_MANIFEST = load(ROOT / "stacks" / "8.5.0.yaml")
REAL = Certified.of_manifest(REAL_MANIFEST)  # certified for driver 25.5.0
REFERENCE = Certified.of_manifest(load(ROOT / "stacks" / "reference.yaml"))  # a CPU simulation: driver none


def certified_host(root: Path, driver: str = "25.5.0") -> Path:
    """An Ascend host as the driver installer leaves it, with the driver version given."""
    ascend_host(root, npus=1)
    (root / "usr/local/Ascend/driver/version.info").write_text(
        f"Version={driver}\ncompatible_version=[V100R001C15],[V100R001C18]\ncompatible_version_fw=[7.0.0,8.9.9]\n"
    )
    (root / "usr/local/Ascend/firmware").mkdir(parents=True)
    (root / "usr/local/Ascend/firmware/version.info").write_text("Version=7.7.0.1.231\n")
    (root / "etc/passwd").write_text(
        "root:x:0:0::/root:/bin/bash\nHwHiAiUser:x:1000:1000::/home/HwHiAiUser:/bin/bash\n"
    )
    (root / "etc/group").write_text("root:x:0:\nHwHiAiUser:x:1000:\n")
    (root / "lib/modules" / os.uname().release / "build").mkdir(parents=True)
    return root


def verdicts(root: Path, stack: Certified) -> dict[str, str]:
    return {c.name: c.verdict for c in host_checks(root, stack)}


def test_a_certified_ascend_host_passes_every_host_check(tmp_path: Path) -> None:
    assert verdicts(certified_host(tmp_path), REAL) == {
        "npu": "ok",
        "devices": "ok",
        "driver": "ok",
        "firmware": "ok",
        "driver user": "ok",
        "kernel headers": "ok",
        "cdi": "ok",
    }


def test_doctor_says_which_cdi_devices_name_the_npus(tmp_path: Path) -> None:
    root = certified_host(tmp_path)
    assert cdi_check(root).detail.startswith("no CDI spec names the NPUs")
    cdi_host(root, [npu("0", 0)])
    detail = cdi_check(root).detail
    assert detail.startswith(f"{CDI_KIND}=0 (/etc/cdi/npus.json): `run --print --format cdi` for Docker 25 or later")


def test_a_driver_the_stack_is_not_certified_for_names_both_versions(tmp_path: Path) -> None:
    check = driver_check(certified_host(tmp_path, driver="25.3.rc1"), REAL)
    assert check.verdict == "fail"
    assert check.detail == "driver 25.3.rc1 installed, 8.5.0 is certified for 25.5.0"
    assert "Ascend-hdk-910b-npu-driver_25.5.0_linux-" in check.remedy
    assert driver_check(certified_host(tmp_path / "b", driver="25.5.0"), REAL).verdict == "ok"


def test_firmware_outside_the_drivers_range_fails(tmp_path: Path) -> None:
    root = certified_host(tmp_path)
    (root / "usr/local/Ascend/firmware/version.info").write_text("Version=6.4.0.4.220\n")
    check = firmware_check(root, REAL)
    assert check.verdict == "fail" and "6.4.0.4.220" in check.detail and "7.0.0" in check.remedy


def test_missing_pieces_each_have_a_remedy(tmp_path: Path) -> None:
    root = certified_host(tmp_path)
    (root / "dev/devmm_svm").unlink()
    (root / "etc/passwd").write_text("root:x:0:0::/root:/bin/bash\n")
    (root / "lib/modules").rename(root / "modules-elsewhere")
    checks = {c.name: c for c in host_checks(root, REAL)}
    assert checks["devices"].verdict == "fail" and "/dev/devmm_svm" in checks["devices"].detail
    assert checks["driver user"].verdict == "fail" and "useradd -g HwHiAiUser" in checks["driver user"].remedy
    assert checks["kernel headers"].verdict == "warn" and "linux-headers-" in checks["kernel headers"].remedy
    assert all(c.remedy for c in checks.values() if c.verdict != "ok")


def test_without_npus_a_cpu_stack_runs_and_a_real_one_cannot(tmp_path: Path) -> None:
    assert verdicts(tmp_path, REFERENCE) == {"npu": "ok"}
    (real,) = host_checks(tmp_path, REAL)
    assert real.verdict == "fail" and "driver 25.5.0" in real.remedy


def test_emulation_is_checked_for_each_foreign_architecture(tmp_path: Path) -> None:
    checks = binfmt_checks(REAL_MANIFEST, tmp_path)  # 8.5.0 lists both architectures: one is foreign here
    assert [c.verdict for c in checks] == ["fail"]
    assert "python -m builder.hostsetup --foreign" in checks[0].remedy
    foreign = checks[0].detail.split()[0]
    (tmp_path / f"qemu-{foreign}").write_text("enabled\ninterpreter /usr/libexec/qemu-binfmt/x\n")
    assert [c.verdict for c in binfmt_checks(REAL_MANIFEST, tmp_path)] == ["ok"]


class Refusing:
    def __init__(self, host: str) -> None:
        self.host = host

    def reach(self, repository: str) -> None:
        raise EngineError(f"registry {self.host} refused the credentials for {repository}: `docker login {self.host}`")


def test_a_registry_that_refuses_says_docker_login() -> None:
    check = registry_check("registry.internal:5000/cache", Refusing)
    assert (check.verdict, check.remedy) == ("fail", "docker login registry.internal:5000")
    assert registry_check(None, Refusing).verdict == "skip"


def test_doctor_json_says_whether_the_host_can_run_the_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STACKBUILD_HOST_ROOT", str(certified_host(tmp_path / "host", driver="25.3.rc1")))
    code, out, _ = run_cli(capsys, "--root", str(ROOT), "doctor", "8.5.0", "--json")
    document = json.loads(out)
    assert code == 1 and document["can_run"] is False
    driver = next(c for c in document["checks"] if c["name"] == "driver")
    assert driver["detail"] == "driver 25.3.rc1 installed, 8.5.0 is certified for 25.5.0"
    assert all(c["remedy"] for c in document["checks"] if c["verdict"] == "fail")


def test_a_driver_installed_but_not_loaded_is_told_apart_from_no_npu(tmp_path: Path) -> None:
    root = certified_host(tmp_path)
    for node in (root / "dev").iterdir():
        node.unlink()
    (check,) = host_checks(root, REAL)
    assert check.verdict == "fail" and "installed but no /dev/davinci<N>" in check.detail and "reboot" in check.remedy


def test_doctor_of_a_tag_checks_the_host_against_the_driver_the_image_was_built_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`stackbuild doctor TAG`, as the README's "what this host lacks to run it" suggests, from any
    directory: the image's labels and carried lock say what it is certified for."""
    image = "registry.example.com/team/8.5.0:8.5.0-910b-ubuntu22.04-py3.11-runtime-x86_64"
    engine = FakeEngine(image_labels={image: {"org.stackbuild.host.driver": "25.5.0"}})
    engine.image_files[image] = {LOCK_IN_IMAGE: (ROOT / "lockfiles" / "8.5.0.lock.json").read_bytes()}
    monkeypatch.setattr(Context, "engine", lambda *_: engine)
    monkeypatch.setenv("STACKBUILD_HOST_ROOT", str(certified_host(tmp_path / "host", driver="25.3.rc1")))
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "doctor", image, "--json")
    document = json.loads(out)
    assert code == 1 and document["image"] == image and document["can_run"] is False, err
    driver = next(c for c in document["checks"] if c["name"] == "driver")
    assert driver["detail"] == "driver 25.3.rc1 installed, 8.5.0 is certified for 25.5.0"  # the image's stack


def test_doctor_says_whether_run_goes_through_the_ascend_docker_runtime() -> None:
    with_it = EngineFacts("Docker", "20.10", "1.41", "overlay2", "BuildKit", None, ("ascend", "runc"))
    assert runtime_check(with_it).detail == "the Ascend Docker Runtime: run gives it ASCEND_VISIBLE_DEVICES"
    without = dataclasses.replace(with_it, runtimes=("runc",))
    assert runtime_check(without).detail == "runc: run gives device nodes and paths"
    assert runtime_check(None).verdict == "skip"


def test_doctor_compares_the_hosts_driver_user_with_the_images_run_user(tmp_path: Path) -> None:
    """The same IDs: ok; others: a warning naming both, what `run` adds and the manifest line that matches
    this host; a root stack is not compared (no line)."""
    host = certified_host(tmp_path)  # HwHiAiUser 1000:1000
    user = RunUser(name="HwHiAiUser", uid=1000, gid=1000)
    stack = dataclasses.replace(REAL, user=user)
    assert {c.name: c.verdict for c in host_checks(host, stack)}["image user"] == "ok"
    assert "image user" not in {c.name for c in host_checks(host, REAL)}
    (host / "etc/passwd").write_text("HwHiAiUser:x:1001:1002::/home/HwHiAiUser:/bin/bash\n")
    (host / "etc/group").write_text("HwHiAiUser:x:1002:\n")
    check = run_user_check(host, user)
    assert check.verdict == "warn"
    assert check.detail == (
        "the images run as HwHiAiUser 1000:1000, this host's HwHiAiUser is 1001:1002: `run` adds group 1002 so "
        "the NPUs open"
    )
    assert check.remedy == "to match, build with user: {name: HwHiAiUser, uid: 1001, gid: 1002}"
    (host / "etc/passwd").write_text("root:x:0:0::/root:/bin/bash\n")
    assert run_user_check(host, user).verdict == "warn"  # no driver user to compare with


def test_doctor_of_a_tag_reads_the_images_run_user_from_its_labels() -> None:
    engine = FakeEngine(image_labels={"img": {"org.stackbuild.user": "HwHiAiUser", "org.stackbuild.user.uid": "1000",
                                              "org.stackbuild.user.gid": "1000"}})  # fmt: skip
    engine.image_files["img"] = {LOCK_IN_IMAGE: (ROOT / "lockfiles" / "8.5.0.lock.json").read_bytes()}
    contents = read_contents(engine, "img", Arch.X86_64)
    assert Certified.of_image(contents).user == RunUser(name="HwHiAiUser", uid=1000, gid=1000)
    engine.image_labels["img"]["org.stackbuild.user.uid"] = "0"
    with pytest.raises(StackbuildError, match="its user labels are not a user"):
        read_contents(engine, "img", Arch.X86_64).run_user()
