"""What every job of one stage's build shares: the stage's log (where it is, how a line goes in) and
the two ways a stage ends without its tag: failed (named with its log) or skipped."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from builder.model.errors import LoggedFailure, StackbuildError


class StateReport(Protocol):
    """A stage's state for the progress display, with an optional note (e.g. which engine)."""

    def __call__(self, state: str, note: str = "") -> None: ...


class StageFailed(LoggedFailure):
    """A stage that did not build: why, the lines of its log that say so, where the whole log is, a
    likely cause the diagnosis knows, and how to look inside what it built."""

    def __init__(
        self,
        stage: str,
        reason: str,
        *,
        log_file: Path,
        log_tail: Sequence[str] = (),
        cause: str | None = None,
        debug: str = "",
    ) -> None:
        lines = [f"stage {stage} failed: {reason}"]
        if log_tail:
            lines += ["last lines of its log:", *(f"  | {line}" for line in log_tail)]
        lines.append(f"full log: {log_file}")
        if cause:
            lines.append(f"likely cause: {cause}")
        if debug:
            lines.append(f"to look inside: {debug}")
        super().__init__("\n".join(lines))
        self.stage, self.reason, self.cause = stage, reason, cause


class StageSkipped(StackbuildError):
    """A parent failed its probes after this stage was built from it: nothing is tagged."""


@dataclass(frozen=True)
class StageLog:
    """One stage's log while a job writes to it."""

    stage: str
    path: Path
    write: Callable[[str], None]

    def failed(
        self, reason: str, *, log_tail: Sequence[str] = (), cause: str | None = None, debug: str = ""
    ) -> StageFailed:
        return StageFailed(self.stage, reason, log_file=self.path, log_tail=log_tail, cause=cause, debug=debug)


def line_writer(log: IO[str]) -> Callable[[str], None]:
    """A function writing one line to log, flushed (a failing build's log is read while it runs)."""

    def write(line: str) -> None:
        log.write(line + "\n")
        log.flush()

    return write
