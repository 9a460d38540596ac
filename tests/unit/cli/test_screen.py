"""What `build`, `plan`, `inspect` and `doctor` print, rendered through rich as a terminal 100 columns
wide shows it: no line over 100 columns, and none wrapped (each line the command prints is one line
on the screen; the live table keeps one line per stage)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rich.cells import cell_len
from rich.console import Console

from builder.cli.screen import WIDTH, doctor_lines, plan_lines, show, tag_lines
from builder.execute import chain
from builder.execute.progress import Reporter
from builder.handoff.contents import handing_over, read_contents, summary
from builder.handoff.doctor import Certified, binfmt_checks, disk_checks, host_checks
from builder.manifest import load
from builder.model.arch import Arch
from builder.plan.why import why
from tests.conftest import ROOT
from tests.fake_engine import FakeEngine
from tests.golden_plan import golden_plan, golden_request
from tests.unit.handoff.test_handoff import REFERENCE, holding

SHA = "sha256:" + "4f" * 32


def on_screen(*printed: object) -> list[str]:
    """What a 100-column terminal shows for each printable (a line: printed as it is, never wrapped)."""
    console = Console(width=WIDTH, record=True, soft_wrap=True, color_system=None)
    for item in printed:
        console.print(item)
    return console.export_text().splitlines()


def fits(lines: list[str]) -> None:
    shown = on_screen(*lines)
    assert shown == lines  # one screen line per printed line
    wide = [line for line in shown if cell_len(line) > WIDTH]
    assert not wide, "\n".join(wide)


def test_builds_live_table_keeps_one_line_per_stage_at_100_columns() -> None:
    plan = golden_plan()
    reporter = Reporter([s.name for s in plan.order()], live=False)
    reporter.statuses["kernels"].state = "failed"
    reporter.statuses["kernels"].note = (
        "build step 2/2: cmake --build build -j 2 failed (exit code 2): kernels/gemm.cc:41:7: error: 'ascendc' "
        "has not been declared"
    )
    reporter.statuses["devkit"].state, reporter.statuses["devkit"].elapsed = "built", 1234.5
    shown = on_screen(reporter._table())
    assert max(cell_len(line) for line in shown) <= WIDTH, "\n".join(shown)
    assert all(f" {header} " in shown[2] for header in ("stage", "status", "elapsed", "cache", "note")), shown[2]
    for stage in plan.order():
        assert sum(f" {stage.name} " in line for line in shown) == 1, "\n".join(shown)
    assert any("build step 2/2: cmake" in line and "…" in line for line in shown), "\n".join(shown)


def test_builds_final_lines_plan_inspect_and_doctor_fit_100_columns(tmp_path: Path) -> None:
    plan = golden_plan()
    fits(tag_lines((tag, SHA, 548_000_000) for tag in plan.final_tags.values()))
    work = chain.cached(plan, FakeEngine())
    cache = golden_request().cache
    rows: list[dict[str, object]] = [
        {"stage": s.name, "status": "build" if s.name in work.to_build else "cached", "why": why(cache, plan, s)}
        for s in plan.order()
    ]
    fits(plan_lines(plan, rows))
    engine = FakeEngine()
    image = "registry.example.com/team/reference:8.5.0-910b-debian12-py3.11-runtime-x86_64"
    holding(engine, image, REFERENCE)
    contents = read_contents(engine, image, Arch.X86_64)
    fits(summary(contents) + handing_over(contents))
    manifest = load(ROOT / "stacks" / "8.5.0.yaml")
    checks = [
        *disk_checks({"cached inputs": tmp_path, "images": Path("/var/lib/docker")}, 40, manifest.name),
        *binfmt_checks(manifest),
        *host_checks(tmp_path, Certified.of_manifest(manifest)),
    ]
    fits(doctor_lines(checks, manifest.name))


def test_output_is_plain_in_a_pipe_and_coloured_on_a_terminal(capsys: object, monkeypatch: object) -> None:
    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    show(["fail  npu             no /dev/davinci* device"])
    captured = capsys.readouterr()  # type: ignore[attr-defined]
    assert captured.out == "fail  npu             no /dev/davinci* device\n"  # a pipe: no escape codes
    monkeypatch.setenv("FORCE_COLOR", "1")
    show(["fail  npu             no /dev/davinci* device"])
    assert "\x1b[1;31mfail" in capsys.readouterr().out  # type: ignore[attr-defined]  # bold red
    monkeypatch.setenv("NO_COLOR", "1")
    show(["fail  npu             no /dev/davinci* device"])
    assert "31m" not in capsys.readouterr().out  # type: ignore[attr-defined]  # no colour (rich keeps bold)


def test_a_reader_that_stops_reading_ends_what_rich_prints_as_a_closed_pipe() -> None:
    """rich's own handler exits 1; the CLI's boundary makes a closed pipe exit 141, quietly."""
    code = "from builder.cli import screen; screen.show(['x' * 50] * 100_000)"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    ) as shown:
        assert shown.stdout is not None and shown.stderr is not None
        shown.stdout.readline()
        shown.stdout.close()
        errors = shown.stderr.read().decode()
        assert shown.wait(timeout=60) == 1 and "BrokenPipeError" in errors, errors  # raised for the boundary
