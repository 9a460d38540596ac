#!/usr/bin/env python3
"""Touch one source of the heavy component, paired: stackbuild at several checkouts and the expert peer.

Not a test. The compile section of build_bench.py runs for 70 minutes; a change to what stackbuild
does around a component's compile is measured here in minutes, against the code before it, in one
run on the same machine state. The bench's compiling stack (bench/heavy_component.py) is built once
with the stackbuild of this checkout, and the expert peer (dag_peer.expert) once. Then, in each
repetition (after one untimed), each side in turn gets an edit of one source and builds it:
- each `NAME=CHECKOUT` is stackbuild run from that checkout (its own `python -m builder`);
- the expert builds the component alone, in one RUN with a BuildKit ccache mount.

The checkouts must give the same stage keys as this one; otherwise a side's first build rebuilds
what it differs in. Reported per side: the wall time, and for stackbuild also the heavy step's
`make` time (its BuildKit step) and the wall minus it: medians, min and max. Whatever stops it, the
stage images and BuildKit's records it made are removed (build_bench.Bench.make_cold).

    python bench/touch_paired.py before=../old-checkout now=. [--units 224] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import build_bench as bench_run
import dag_peer
import heavy_component

from builder import lock
from builder.engine import buildkit
from builder.model.arch import Arch

# The heavy stage's compile step (the one with the compile cache's tool mounted), by its BuildKit number.
MAKE_STEP = re.compile(r"#(\d+) \[stage-\d+ \d+/\d+\] RUN --mount=type=bind,from=\S*compile-cache")


def make_seconds(log: str) -> float:
    """How long the heavy stage's compile step took, from BuildKit's progress in its stage log."""
    step = MAKE_STEP.search(log)
    done = re.search(rf"^#{step[1]} DONE ([\d.]+)s", log, re.M) if step else None
    if done is None:
        sys.exit("touch_paired: the heavy stage's log has no finished compile step")
    return float(done[1])


def stackbuild_once(root: Path, checkout: str) -> tuple[float, float, tuple[int, int] | None]:
    """A build of the compiling stack by the checkout's stackbuild: wall time, make time, the compile
    cache's (hits, misses)."""
    env = {**os.environ, "PYTHONPATH": checkout}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as a user runs it: byte code cached
    command = [sys.executable, "-m", "builder", "--root", str(root), "build", "--no-smoke", bench_run.COMPILING]
    since, started = time.time(), time.monotonic()
    run = subprocess.run(command, env=env, cwd=checkout, capture_output=True, text=True)
    wall = time.monotonic() - started
    if run.returncode != 0:
        sys.exit(f"touch_paired: the build at {checkout} failed:\n{run.stderr[-2000:]}")
    log = (root / ".stackbuild" / "logs" / bench_run.COMPILING / Arch.host().value / "heavy.log").read_text()
    return wall, make_seconds(log), bench_run.cache_line(root, bench_run.COMPILING, heavy_component.NAME, since)


def spread(values: list[float]) -> str:
    """Median, min and max, in seconds."""
    return f"median {statistics.median(values):.2f} s (min {min(values):.2f}, max {max(values):.2f})"


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sides", nargs="+", metavar="NAME=CHECKOUT", help="a stackbuild checkout to time")
    parser.add_argument("--units", type=int, default=heavy_component.UNITS, help="translation units (224)")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions (5)")
    return parser.parse_args()


def main() -> int:
    args = arguments()
    sides = dict(side.split("=", 1) for side in args.sides)
    cli = buildkit.find_cli()
    if cli is None:
        sys.exit("touch_paired: no docker CLI with BuildKit here (install docker.io)")
    with tempfile.TemporaryDirectory(prefix="stackbuild-touch.") as tmp:
        root = Path(tmp)
        bench_run.prepare(root, [])
        bench_run.prepare_compiling(root, args.units, heavy_component.SEED)
        bench = bench_run.Bench(root, cli)
        try:
            bench.lock(bench_run.COMPILING)
            bench_run.say(f"cold build, this checkout: {bench.build_stackbuild(bench_run.COMPILING, 0.0).wall:.2f} s")
            plan = bench_run.plan_of(root, bench_run.COMPILING)
            system = (
                lock.read(root / "lockfiles" / f"{bench_run.COMPILING}.lock.json").architectures[Arch.host()].system
            )
            expert, source = root / "peers" / "expert", root / "stacks" / heavy_component.NAME
            debs = [*system.components[heavy_component.NAME], *system.compile_cache]
            dag_peer.expert(plan.stages["base-devel"].tag(), debs, bench.cache, source, heavy_component.BUILD, expert)
            bench_run.say(f"cold build, expert: {bench.build_expert(expert)[0].wall:.2f} s")
            touched = heavy_component.touched_source(args.units)
            walls: dict[str, list[float]] = {name: [] for name in [*sides, "expert"]}
            makes: dict[str, list[float]] = {name: [] for name in sides}
            # One untimed touch per side first: a checkout whose keys differ rebuilds there, and each
            # side's stages hold what normalising rewrote for it.
            for n in range(-1, args.repeat):
                for name, checkout in sides.items():
                    heavy_component.edit(source / touched)
                    wall, make, cache = stackbuild_once(root, checkout)
                    bench_run.say(
                        f"{n if n >= 0 else 'warm-up'} {name}: {wall:.2f} s, make {make:.2f} s, {cache} (hits, misses)"
                    )
                    if n >= 0:
                        walls[name].append(wall)
                        makes[name].append(make)
                heavy_component.edit(expert / heavy_component.NAME / touched)
                took, stats = bench.build_expert(expert)
                bench_run.say(f"{n if n >= 0 else 'warm-up'} expert: {took.wall:.2f} s, {stats}")
                if n >= 0:
                    walls["expert"].append(took.wall)
        finally:
            bench.make_cold()
    for name, found in walls.items():
        print(f"{name}: wall {spread(found)}")
        if name in makes:
            fixed = [wall - make for wall, make in zip(found, makes[name], strict=True)]
            print(f"{name}: make {spread(makes[name])}; wall minus make {spread(fixed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
