#!/usr/bin/env python3
"""Benchmark: stackbuild vs the same stack written as one multi-stage Dockerfile for BuildKit.

Not a test. In one run, on the reference stack, both sides on the same base images (prepared
before timing): a cold build (stage images removed and BuildKit's cache pruned, the same way
for both), a no-op rebuild and a rebuild after touching one harness source, each repeated
(--repeat, default 3) and reported as medians of the whole process's wall time. The peers:

- BuildKit DAG: the stack's graph as one multi-stage Dockerfile (bench/dag_peer.py: the same
  stages, commands and probes as RUN steps), both final images built with
  `DOCKER_BUILDKIT=1 docker build --target ...`;
- classic linear: bench/baseline.Dockerfile, each stage FROM the previous one, classic builder.

Also reported: where stackbuild's time goes per stage (from its stage logs), its own peak RSS, a
second machine (an empty second daemon) building from a loopback registry this one filled,
that both sides produce the same /opt/stack tree, and a heavy run with the reference toolkit
padded to --heavy-mb MiB (0 skips it).

    python bench/build_bench.py [--repeat 3] [--heavy-mb 1024] [--markdown]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import dag_peer  # noqa: E402

from builder import lock, manifest  # noqa: E402
from builder.engine import buildkit, connect  # noqa: E402
from builder.execute import chain  # noqa: E402
from builder.execute.chain import Request  # noqa: E402
from builder.inputs.site import SiteConfig  # noqa: E402
from builder.model.arch import Arch  # noqa: E402
from builder.plan.stage import Plan  # noqa: E402
from builder.store.cache import Cache, default_root  # noqa: E402
from tests.docker.conftest import SecondDaemon  # noqa: E402
from tests.helpers import registry  # noqa: E402

STACK = "benchref"
HEAVY = "benchheavy"
PEER = "stackbuild-bench/peer"
CLASSIC = "stackbuild-bench/classic:latest"
# Runs the CLI in-process, as the `stackbuild` command does (builder.__main__.entry: the collector
# paused for start-up), so the builder's own peak RSS can be read at the end.
WITH_RSS = (
    "import gc; gc.disable(); import resource, sys; from builder.cli import main; code = main(sys.argv[1:]); "
    "print(f'bench-maxrss-kb {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}', file=sys.stderr); sys.exit(code)"
)
# Left out: what differs between any two builds of one side (pip stamps .pyc files with the install
# time, makeself .run archives carry their build date, CMake's logs their timings).
UNSTABLE = "! -name '*.pyc' ! -name '*.run' ! -path '*/CMakeFiles/*'"
# As a user runs it: Python caches bytecode (this machine's environment turns that off).
STACKBUILD_ENV = {"PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": ""}
TREE_DIGEST = f"cd /opt/stack && find . -type f {UNSTABLE} -print0 | sort -z | xargs -0 sha256sum | sha256sum"


def sh(*cmd: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    run = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if run.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd[:5])}... failed:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
    return run


def timed(action: Callable[[], object]) -> float:
    start = time.monotonic()
    action()
    return time.monotonic() - start


@dataclass
class Side:
    """One side's wall times per scenario, and stackbuild's peak RSS (KiB)."""

    times: dict[str, list[float]] = field(default_factory=dict)
    rss_kb: int = 0

    def add(self, scenario: str, seconds: float) -> None:
        self.times.setdefault(scenario, []).append(seconds)

    def median(self, scenario: str) -> float:
        return statistics.median(self.times[scenario])


class Bench:
    def __init__(self, root: Path, cli: str) -> None:
        self.root, self.cli = root, cli
        self.engine = connect(builder="buildkit")
        self.stackbuild, self.peer, self.classic = Side(), Side(), Side()

    def run_stackbuild(self, stack: str, *args: str) -> float:
        start = time.monotonic()
        run = sh(sys.executable, "-c", WITH_RSS, "--root", str(self.root), *args, stack, env=STACKBUILD_ENV)
        wall = time.monotonic() - start
        if match := re.search(r"bench-maxrss-kb (\d+)", run.stderr):
            self.stackbuild.rss_kb = max(self.stackbuild.rss_kb, int(match.group(1)))
        return wall

    def build_stackbuild(self, stack: str = STACK) -> float:
        return self.run_stackbuild(stack, "build", "--no-smoke")

    def build_peer(self, context: Path, tag: str = PEER) -> float:
        def both() -> None:
            for target in ("devel-image", "runtime-image"):
                env = {"DOCKER_BUILDKIT": "1"}
                sh(self.cli, "build", "-q", "--target", target, "-t", f"{tag}:{target}", str(context), env=env)

        return timed(both)

    def build_classic(self, context: Path, base_image: str) -> float:
        command = ["docker", "build", "-q", "-f", str(context / "baseline.Dockerfile")]
        command += ["--build-arg", f"BASE={base_image}", "-t", CLASSIC, str(context)]
        return timed(lambda: sh(*command, env={"DOCKER_BUILDKIT": "0"}))

    def make_cold(self) -> None:
        """No stage image but the bases, no final tag, BuildKit's cache pruned: cold for every side."""
        for tag in self.engine.tags("stackbuild/stage/*"):
            if not tag.split(":")[0].endswith(("base-devel", "base-runtime")):
                self.engine.remove(tag)
        for repository in (f"stackbuild/{STACK}", f"stackbuild/{HEAVY}", PEER, f"{PEER}-heavy", CLASSIC.split(":")[0]):
            for tag in self.engine.tags(repository):
                self.engine.remove(tag)
        sh(self.cli, "builder", "prune", "-af", env={"DOCKER_BUILDKIT": "1"})
        self.engine.client.images.prune(filters={"dangling": True})

    def tree_digest(self, image: str) -> str:
        return self.engine.run(image, ["sh", "-c", TREE_DIGEST]).output.split()[0]


def second_machine(bench: Bench, root: Path, repeat: int) -> list[float]:
    """Daemon B, a second Docker daemon with an empty image store, builds the stack from a loopback
    registry that this daemon (A) filled with every stage: the wall times of B's builds."""
    times = []
    with registry(root / "registry") as address:
        cache = f"{address}/bench/cache"
        bench.run_stackbuild(STACK, "build", "--no-smoke", "--cache-to", cache)  # A pushes every stage
        daemon = SecondDaemon(Path(tempfile.mkdtemp(prefix="sb-bench-", dir="/tmp")))  # a short socket path
        daemon.start()
        try:
            machine_b = connect(daemon.host)
            for _ in range(repeat):
                for tag in machine_b.tags("stackbuild/stage/*") | machine_b.tags(f"stackbuild/{STACK}"):
                    machine_b.remove(tag)
                env = {**STACKBUILD_ENV, "DOCKER_HOST": daemon.host}
                start = time.monotonic()
                sh(sys.executable, "-m", "builder", "--root", str(root), "build", "--no-smoke", "--cache-from", cache,
                   STACK, env=env)  # fmt: skip
                times.append(time.monotonic() - start)
        finally:
            daemon.remove()
            shutil.rmtree(daemon.base, ignore_errors=True)
    return times


def plan_of(root: Path, stack: str) -> Plan:
    path = root / "stacks" / f"{stack}.yaml"
    locked = lock.read(root / "lockfiles" / f"{stack}.lock.json")
    request = Request(manifest.load(path), path, locked, SiteConfig(), Cache(default_root()), Arch.host())
    return chain.plan(request, lambda _: None)


def stage_breakdown(root: Path, stack: str) -> list[tuple[str, float, float, float, float]]:
    """(stage, context s, build s, normalise s, probes s) from the stage logs of the last build."""
    rows = []
    for log in sorted((root / ".stackbuild" / "logs" / stack / Arch.host().value).glob("*.log")):
        text = log.read_text()
        marks = dict(re.findall(r"^# (context ready|image built|built and probed) in ([\d.]+)s", text, re.M))
        normalised = re.search(r"^# normalised to \S+ in ([\d.]+)s", text, re.M)
        if len(marks) == 3:
            ready, built, probed = (float(marks[k]) for k in ("context ready", "image built", "built and probed"))
            normalise = float(normalised[1]) if normalised else 0.0
            rows.append((log.stem, ready, built - ready, normalise, max(0.0, probed - built - normalise)))
    return rows


def touch(*paths: Path) -> None:
    """The same edit to each copy of a source file."""
    line = f"\n# bench {uuid.uuid4().hex}\n"
    for path in paths:
        path.write_text(path.read_text() + line)


def prepare(root: Path, heavy_mb: int) -> None:
    stacks = root / "stacks"
    shutil.copytree(
        ROOT / "stacks" / "reference", stacks / "reference", ignore=shutil.ignore_patterns("build", "__pycache__")
    )
    text = (ROOT / "stacks" / "reference.yaml").read_text()
    (stacks / f"{STACK}.yaml").write_text(text.replace("name: reference", f"name: {STACK}"))
    if heavy_mb:
        heavy = text.replace("name: reference", f"name: {HEAVY}").replace(
            "--output-dir {output_dir}", f"--pad-mb {heavy_mb} --output-dir {{output_dir}}"
        )
        (stacks / f"{HEAVY}.yaml").write_text(heavy)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="repetitions per scenario (medians reported)")
    parser.add_argument("--heavy-mb", type=int, default=1024, help="toolkit padding of the heavy run (0: skip it)")
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    args = parser.parse_args()
    cli = buildkit.find_cli()
    if cli is None:
        sys.exit("bench: no docker CLI with BuildKit here (install docker.io)")
    with tempfile.TemporaryDirectory(prefix="stackbuild-bench.") as tmp:
        root = Path(tmp)
        prepare(root, args.heavy_mb)
        bench = Bench(root, cli)
        say = lambda message: print(f"bench: {message}", file=sys.stderr, flush=True)  # noqa: E731
        say("locking and building once (bases, not timed)")
        bench.run_stackbuild(STACK, "lock")
        bench.build_stackbuild()
        plan = plan_of(root, STACK)
        peer_context = root / "peer"
        dag_peer.compose(plan, Cache(default_root()), peer_context)
        base_image = plan.stages["base-devel"].tag()
        shutil.copy(ROOT / "bench" / "baseline.Dockerfile", root / "stacks" / "baseline.Dockerfile")
        shutil.copytree(peer_context / "ascend-c" / "debs", root / "stacks" / "debs")
        sh(sys.executable, str(root / "stacks" / "reference" / "toolkit" / "pack.py"), "--arch", "x86_64",
           "--output-dir", str(root / "stacks" / "dist"))  # fmt: skip

        for n in range(args.repeat):
            say(f"cold, repetition {n + 1}/{args.repeat}")
            bench.make_cold()
            bench.stackbuild.add("cold", bench.build_stackbuild())
            breakdown = stage_breakdown(root, STACK)
            bench.make_cold()
            bench.peer.add("cold", bench.build_peer(peer_context))
            bench.make_cold()
            bench.classic.add("cold", bench.build_classic(root / "stacks", base_image))
        bench.build_stackbuild()
        bench.build_peer(peer_context)
        same = bench.tree_digest(plan.final_tags["devel-image"]) == bench.tree_digest(f"{PEER}:devel-image")
        for n in range(args.repeat):
            say(f"no-op and touch-harness, repetition {n + 1}/{args.repeat}")
            bench.stackbuild.add("no-op", bench.build_stackbuild())
            bench.peer.add("no-op", bench.build_peer(peer_context))
            bench.classic.add("no-op", bench.build_classic(root / "stacks", base_image))
            touch(
                root / "stacks" / "reference" / "harness" / "harness" / "__init__.py",
                peer_context / "harness" / "src" / "harness" / "__init__.py",
            )
            bench.stackbuild.add("touch harness", bench.build_stackbuild())
            bench.peer.add("touch harness", bench.build_peer(peer_context))
            bench.classic.add("touch harness", bench.build_classic(root / "stacks", base_image))

        say(f"second machine: an empty daemon pulls every stage from a registry this one filled ({args.repeat}x)")
        bench.stackbuild.times["second machine"] = second_machine(bench, root, args.repeat)
        heavy: tuple[float, float, int] | None = None
        if args.heavy_mb:
            say(f"heavy run: the toolkit padded to {args.heavy_mb} MiB (locking packs it, not timed)")
            bench.run_stackbuild(HEAVY, "lock")
            heavy_context = root / "peer-heavy"
            bench.make_cold()
            rss_before, bench.stackbuild.rss_kb = bench.stackbuild.rss_kb, 0
            heavy_sb = bench.build_stackbuild(HEAVY)
            heavy_rss, bench.stackbuild.rss_kb = bench.stackbuild.rss_kb, max(rss_before, bench.stackbuild.rss_kb)
            dag_peer.compose(plan_of(root, HEAVY), Cache(default_root()), heavy_context)
            bench.make_cold()
            heavy = (heavy_sb, bench.build_peer(heavy_context, f"{PEER}-heavy"), heavy_rss)
        bench.make_cold()
        report(bench, breakdown, same, heavy, args)
    return 0


def report(
    bench: Bench,
    breakdown: list[tuple[str, float, float, float, float]],
    same: bool,
    heavy: tuple[float, float, int] | None,
    args: argparse.Namespace,
) -> None:
    info = bench.engine.client.info()
    machine = (
        f"{platform.machine()}, {os.cpu_count()} cores, {info['MemTotal'] / 2**30:.0f} GiB, "
        f"Docker {info['ServerVersion']} ({info['Driver']}), Python {platform.python_version()}"
    )
    header = ("scenario", "stackbuild (s)", "BuildKit DAG (s)", "ratio", "classic linear (s)")
    rows = [
        (
            scenario,
            f"{bench.stackbuild.median(scenario):.2f}",
            f"{bench.peer.median(scenario):.2f}",
            f"{bench.stackbuild.median(scenario) / bench.peer.median(scenario):.2f}x",
            f"{bench.classic.median(scenario):.2f}",
        )
        for scenario in ("cold", "touch harness", "no-op")
    ]
    stages = [("stage", "context (s)", "build (s)", "normalise (s)", "probes (s)")]
    stages += [(name, f"{c:.2f}", f"{b:.2f}", f"{n:.2f}", f"{p:.2f}") for name, c, b, n, p in breakdown]
    lines = [f"machine: {machine}", f"medians of {args.repeat} runs, wall time of the whole process", ""]
    lines += table(header, rows, args.markdown)
    lines += ["", "stackbuild per stage (last cold run, from its stage logs):", ""]
    lines += table(stages[0], stages[1:], args.markdown)
    lines += ["", f"same /opt/stack tree in both devel images (but .pyc, .run, CMakeFiles): {'yes' if same else 'NO'}"]
    lines.append(f"stackbuild peak RSS: {bench.stackbuild.rss_kb / 1024:.0f} MiB")
    second, cold = bench.stackbuild.median("second machine"), bench.stackbuild.median("cold")
    lines.append(
        f"second machine (daemon B, empty, every stage from a loopback registry daemon A filled): {second:.2f} s, "
        f"against A's cold build {cold:.2f} s"
    )
    if heavy:
        sb, peer, rss = heavy
        lines.append(
            f"heavy run (toolkit padded to {args.heavy_mb} MiB), cold: stackbuild {sb:.2f} s, BuildKit DAG "
            f"{peer:.2f} s ({sb / peer:.2f}x); stackbuild peak RSS {rss / 1024:.0f} MiB"
        )
    print("\n".join(lines))


def table(header: tuple[str, ...], rows: list[tuple[str, ...]], markdown: bool) -> list[str]:
    if markdown:
        return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
            "| " + " | ".join(row) + " |" for row in rows
        ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in [header, *rows]]


if __name__ == "__main__":
    sys.exit(main())
