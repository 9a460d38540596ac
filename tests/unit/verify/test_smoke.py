"""The smoke's device access (builder.verify.smoke): the NPU's device nodes and the driver given to
the container, and a smoke that needs a device skipped, never passed, without one."""

from __future__ import annotations

from pathlib import Path

from builder.engine import launcher
from builder.manifest.model import Smoke
from builder.verify.smoke import run_smoke, smoke_report
from tests.fake_engine import FakeEngine


def test_smoke_gives_the_npu_and_driver_to_the_container() -> None:
    """The production smoke path: the device nodes, the control nodes and the driver mounts reach the engine."""
    engine = FakeEngine()
    spec = Smoke(command="launch", expect="success", needs_device=True)
    outcome = run_smoke(engine, "img", spec, devices=["/dev/davinci0", "/dev/davinci3"])
    assert outcome.passed and outcome.launched
    access = engine.runs[-1][2]
    assert access.devices == (
        "/dev/davinci0",
        "/dev/davinci3",
        "/dev/davinci_manager",
        "/dev/devmm_svm",
        "/dev/hisi_hdc",
    )
    assert "/usr/local/Ascend/driver/lib64/" in access.read_only_mounts
    flags = " ".join(launcher().launch_line("img", [], access=outcome.access))
    for expected in (
        "--device /dev/davinci0",
        "--device /dev/davinci_manager",
        "--device /dev/devmm_svm",
        "--device /dev/hisi_hdc",
        "-v /usr/local/Ascend/driver/lib64/:/usr/local/Ascend/driver/lib64/:ro",
        "-v /etc/ascend_install.info:/etc/ascend_install.info:ro",
    ):
        assert expected in flags


def test_smoke_without_npu_is_skipped_never_passed() -> None:
    engine = FakeEngine()
    outcome = run_smoke(engine, "img", Smoke(command="launch", expect="success", needs_device=True), devices=[])
    assert not outcome.passed and not outcome.launched
    assert outcome.summary == "launch: skipped (no NPU device on this host); static checks passed"
    assert engine.runs[-1][2].devices == ()


def test_a_smoke_that_ran_but_printed_no_match_names_what_it_expected_and_keeps_its_output(tmp_path: Path) -> None:
    engine = FakeEngine(smoke_output="Kernel launch: done\n")
    spec = Smoke(command="launch", expect="Kernel launch success!", needs_device=True)
    outcome = run_smoke(engine, "img", spec, devices=["/dev/davinci0"])
    assert outcome.failed
    assert outcome.summary == (
        "launch: FAILED (exit code 0, but its output has no match for the expected 'Kernel launch success!')"
    )
    log = tmp_path / "logs" / "smoke.log"
    lines = smoke_report(outcome, "img", spec.command, log)
    assert lines[-1] == f"[stackbuild] its whole output: {log}" and log.read_text() == "Kernel launch: done\n"


def test_the_smoke_adds_the_hosts_npu_group_with_the_npus() -> None:
    """An image running as a user opens the NPUs through the host's group (verify.host.npu_group)."""
    engine = FakeEngine()
    spec = Smoke(command="launch", expect="success", needs_device=True)
    outcome = run_smoke(engine, "img", spec, devices=["/dev/davinci0"], groups=(1234,))
    assert engine.runs[-1][2].groups == (1234,)
    assert launcher().launch_line("img", [], access=outcome.access)[-3:] == ["--group-add", "1234", "img"]
