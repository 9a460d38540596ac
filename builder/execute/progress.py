"""Progress of a build: plain `[stackbuild] stage: state` lines, or a live table on a terminal (rich)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rich is imported only for a terminal: plain lines need none of it
    from rich.live import Live
    from rich.table import Table

STATES = ("waiting", "cached", "pulling", "building", "probing", "pushing", "built", "pulled", "failed", "skipped")
# Colours on a terminal (rich leaves them out with NO_COLOR); the table is the only place they show.
STATE_STYLES = {"built": "green", "cached": "green", "pulled": "green", "failed": "bold red", "skipped": "yellow"}
NOTE_WIDTH = 44  # the note column's, so stage, status, elapsed, cache and note fit 100 columns


@dataclass
class StageStatus:
    name: str
    state: str = "waiting"
    started: float = 0.0
    elapsed: float = 0.0
    note: str = ""


class Reporter:
    def __init__(self, stages: Iterable[str], live: bool) -> None:
        self.statuses = {name: StageStatus(name) for name in stages}
        self.lock = threading.Lock()
        self.live: Live | None = None
        if live:
            from rich.console import Console
            from rich.live import Live

            self.live = Live(self._table(), console=Console(stderr=True), refresh_per_second=4, transient=False)

    def _table(self) -> Table:
        from rich.table import Table
        from rich.text import Text

        table = Table(title="stackbuild", expand=False)
        for column in ("stage", "status", "elapsed", "cache"):
            table.add_column(column, no_wrap=True)
        # One line per stage whatever the terminal's width: a long note is cut (the log has all of it).
        table.add_column("note", no_wrap=True, overflow="ellipsis", max_width=NOTE_WIDTH)
        now = time.monotonic()
        for s in self.statuses.values():
            elapsed = s.elapsed or (now - s.started if s.started else 0.0)
            cache = "hit" if s.state == "cached" else ("miss" if s.state not in ("waiting", "skipped") else "")
            status = Text(s.state, style=STATE_STYLES.get(s.state, ""))
            table.add_row(s.name, status, f"{elapsed:.1f}s" if elapsed else "", cache, s.note)
        return table

    def __enter__(self) -> Reporter:
        if self.live:
            self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live:
            self.live.update(self._table())
            self.live.__exit__(None, None, None)

    def names(self, state: str) -> list[str]:
        return [s.name for s in self.statuses.values() if s.state == state]

    def update(self, name: str, state: str, note: str = "") -> None:
        with self.lock:
            status = self.statuses[name]
            if state == "building":
                status.started = time.monotonic()
            if state in ("built", "pulled", "failed") and status.started:
                status.elapsed = time.monotonic() - status.started
            status.state, status.note = state, note or status.note
            if self.live:
                self.live.update(self._table())
            else:
                took = f" ({status.elapsed:.1f}s)" if state in ("built", "pulled", "failed") else ""
                print(f"[stackbuild] {name}: {state}{took}{' - ' + note if note else ''}", file=sys.stderr, flush=True)
