"""What people read, made for a terminal 100 columns wide: the lines `build`, `publish`, `plan` and
`doctor` print (digests cut to 12 hex digits, the whole ones in `--json`), printed through rich so
verdicts are coloured on a terminal and plain in a pipe or with NO_COLOR (rich reads both)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from builder.execute.progress import STATE_STYLES

if TYPE_CHECKING:
    from builder.engine import Engine
    from builder.execute.chain import Built
    from builder.execute.compile_mounts import CacheState
    from builder.handoff.doctor import Check
    from builder.plan.plan_model import Plan

WIDTH = 100
STYLES = {**STATE_STYLES, "ok": "green", "warn": "yellow", "build": "yellow", "fail": "bold red"}


def short(digest: str) -> str:
    """A digest's first 12 hex digits, as `docker images` shows ids."""
    return digest.rpartition(":")[2][:12]


def tag_lines(tags: Iterable[tuple[str, str, int]]) -> list[str]:
    """Each final image: its tag, short id and size ((tag, image id, bytes))."""
    return [f"{tag}  {short(image)}  ({size / 1e6:.0f} MB)" for tag, image, size in tags]


def final_lines(engine: Engine, built: Built) -> list[str]:
    """`build` and `publish`: each final image built, as the engine has it."""
    facts = {tag: engine.inspect(tag) for tag in built.tagged.tags.values()}
    return tag_lines((tag, about.id, about.size) for tag, about in facts.items())


def plan_lines(plan: Plan, rows: Sequence[dict[str, object]]) -> list[str]:
    """`plan`: each stage cached or to build and why, then what differs from the lock."""
    width = max(len(str(row["stage"])) for row in rows)
    lines = [f"{row['stage']!s:<{width}}  {row['status']!s:<6}  {row['why']}".rstrip() for row in rows]
    lines += [f"note: {line}" for line in plan.drift]
    lines += [network_note(stage.name) for stage in plan.order() if stage.network]
    return lines


def compile_cache_lines(states: Sequence[CacheState]) -> list[str]:
    """`plan`: each component's compile cache, used or not and why, and what the engine keeps of it."""
    lines = []
    for state in states:
        kept = f", {state.size / 1e6:.1f} MB kept" if state.size else ""
        what = f"{state.detail}{kept}" if state.used else f"none: {state.detail}{kept}"
        lines.append(f"compile cache of {state.component}: {what}")
    return lines


def network_note(stage: str) -> str:
    """What `plan` and verify-reproducible say of a stage that builds with network access."""
    return f"note: {stage} builds with network access (network: true): what it downloads is not pinned"


def doctor_lines(checks: Sequence[Check], subject: str) -> list[str]:
    lines = []
    for check in checks:
        lines.append(f"{check.verdict:<5} {check.name:<15} {check.detail}")
        if check.remedy:
            lines.append(f"{'':<21}fix: {check.remedy}")
    failed = sum(check.verdict == "fail" for check in checks)
    lines.append(
        f"this host can build and run {subject}"
        if not failed
        else f"this host cannot build and run {subject}: {failed} check(s) failed"
    )
    return lines


def show(lines: Iterable[str], stderr: bool = False) -> None:
    """The lines, each as it is (never wrapped), its first word coloured when it is a verdict."""
    from rich.console import Console
    from rich.text import Text

    class PipeConsole(Console):
        def on_broken_pipe(self) -> None:  # rich's own handler exits 1: the CLI's boundary ends it quietly
            raise BrokenPipeError

    console = PipeConsole(file=sys.stderr if stderr else sys.stdout, highlight=False, soft_wrap=True)
    for line in lines:
        word = line.split(" ", 1)[0]
        text = Text(line)
        if word in STYLES:
            text.stylize(STYLES[word], 0, len(word))
        console.print(text)
