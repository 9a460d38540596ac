#!/usr/bin/env python3
"""The phases of builds the bench kept with --logs: for each build directory, each log's steps that
took 0.3 s or more, the RUN and COPY steps BuildKit took from its cache (CACHED), context transfers of
megabytes or more, layer exports, and stackbuild's own marks (context ready, image built, as built
for, normalised, built and probed), each at the seconds since its build started.

    python bench/log_phases.py LOGS/004-1gib-touch-toolkit-1-stackbuild [...]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

STAMPED = re.compile(r"^\[ *([\d.]+)\] (.*)$")
STEP = re.compile(r"^#(\d+) (\[.*)$")
ENDED = re.compile(r"^#(\d+) (DONE|CACHED) ?([\d.]+)?s?$")
# A context of megabytes or more sent to BuildKit, or layers exported.
BULK = re.compile(r"transferring context: [\d.]+[MG]B .*done|exporting layers [\d.]+s done")
MARK = re.compile(r"^# (stage |context ready|image built|as built for|normalised|built and probed)")
SLOW = 0.3


def phases(log: Path) -> list[tuple[float, str]]:
    """The log's phases, (seconds since its build started, what)."""
    names: dict[str, str] = {}
    found = []
    for raw in log.read_text().splitlines():
        stamped = STAMPED.match(raw)
        if stamped is None:
            continue
        at, line = float(stamped[1]), stamped[2]
        if step := STEP.match(line):
            names[step[1]] = step[2][:90]
        elif ended := ENDED.match(line):
            name, took = names.get(ended[1], f"#{ended[1]}"), float(ended[3] or 0)
            if ended[2] == "CACHED" and re.search(r"\] (RUN|COPY --from)", name):
                found.append((at, f"CACHED {name}"))
            elif ended[2] == "DONE" and took >= SLOW:
                found.append((at, f"{took:.1f} s: {name}"))
        elif BULK.search(line):
            found.append((at, line.split(" ", 1)[1]))
        elif MARK.match(line):
            found.append((at, line[:160]))
    return found


def main(directories: list[str]) -> int:
    for directory in map(Path, directories):
        print(f"=== {directory.name}")
        for log in sorted(directory.glob("*.log")):
            print(f"  -- {log.stem}")
            for at, what in phases(log):
                print(f"  [{at:6.2f}] {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
