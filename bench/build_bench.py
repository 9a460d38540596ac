#!/usr/bin/env python3
"""Benchmark: stackbuild against the same stack written as one multi-stage Dockerfile for BuildKit.

Not a test. In one run, on the reference stack, every side on the same base images (prepared
before timing), each scenario repeated (--repeat, default 3) and reported as medians of the whole
process's wall time:

- the small stack: cold (stage images removed and BuildKit's cache pruned, the same way for every
  side), no-op, touch one harness source;
- a size sweep: the toolkit padded to each of --sizes GiB (0.25, 1 and 4 by default; the top point
  lowered to the whole GiB the disk has room for, at least 1), cold, touch-harness and touch-toolkit
  (one file of its installer's payload; the installer is packed again before timing, an edit of its
  own for each side: BuildKit would find another side's steps on the same bytes);
- a second machine (an empty second daemon) building from a loopback registry this one filled,
  for the small stack and at --second-gib GiB;
- compiling (issue 54): the stack with a generated heavy C++ component added (bench/heavy_component.py,
  --compile-units translation units that all include one header, built by make -j), cold, touch one
  of its sources and touch that header, on four sides: stackbuild (compile cache on), stackbuild
  with --no-compile-cache, the BuildKit DAG peer as it is (no compile cache) and the expert peer
  (dag_peer.expert). stackbuild's compile-cache hits are read from its stage log's line, the expert's
  from ccache's statistics; the component's own build time from the stage logs.

The peers, built by the same BuildKit from stackbuild's own rendered stages (bench/dag_peer.py):

- BuildKit DAG: the stack's graph as one multi-stage Dockerfile with each stage's probes as a RUN
  step (it checks what stackbuild checks), both final images built with `docker build --target`;
- hand-written: the same Dockerfile without the probe steps (what a user would write instead);
- hand-written, one build per stage (small stack only): that file built in stackbuild's order, one
  `docker build --target` per stage, those of one depth at once; what stackbuild's structure costs
  before anything it adds (probes, normalising, environments);
- classic linear (small stack only): bench/baseline.Dockerfile, each stage FROM the previous one,
  the classic builder;
- expert (compile scenarios only): the heavy component alone FROM the same devel base, g++ and ccache
  installed from the lock's .debs in an earlier step, built in one RUN through ccache with a BuildKit
  cache mount (`RUN --mount=type=cache,target=/root/.cache/ccache`), nothing else cached.

Beside each wall time, the CPU time the machine's cores were busy meanwhile (on a machine whose
cores are all busy, wall time follows it), and what one `docker build` with nothing to do costs
here (every side pays it once per build).

Also reported: stackbuild's critical path in the last cold run (from its stage logs: context and
build of each stage on it, then the last one's normalising; children start on a parent as built,
its normalising and probes run beside them), its peak RSS, its peak temporary disk (its own
scratch files under the cache's tmp directory, sampled during each build; hard links to the
cache's blobs are not new disk), and whether both sides give the same /opt/stack tree.

    python bench/build_bench.py [--repeat 3] [--sizes 0.25,1,4] [--second-gib 1] [--markdown] [--plot FILE]
        [--compile-units 224] [--compile-seed 54] [--compile-plot FILE] [--only compile]
    python bench/build_bench.py --only touch-toolkit --sizes 1 [--manifest stacks/reference-8.3.yaml] [--logs DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import dag_peer  # noqa: E402
import heavy_component  # noqa: E402

from builder import lock, manifest  # noqa: E402
from builder.cli.configuration import cache_root, resolve  # noqa: E402
from builder.engine import buildkit, connect  # noqa: E402
from builder.engine.docker_engine import DockerEngine  # noqa: E402
from builder.execute import chain, environment  # noqa: E402
from builder.execute.chain import Request  # noqa: E402
from builder.inputs import signed  # noqa: E402
from builder.inputs.site import SiteConfig  # noqa: E402
from builder.model.arch import Arch  # noqa: E402
from builder.model.names import repository  # noqa: E402
from builder.plan.plan_model import STAGES, Plan  # noqa: E402
from builder.store.cache import Cache  # noqa: E402
from tests.docker.conftest import SecondDaemon  # noqa: E402
from tests.helpers import registry  # noqa: E402

SMALL = "benchref"
PEER, HAND, CLASSIC = "stackbuild-bench/peer", "stackbuild-bench/hand", "stackbuild-bench/classic:latest"
EXPERT = "stackbuild-bench/expert"  # the compile scenarios' expert peer (dag_peer.expert)
COMPILING = "benchcc"  # the small stack with the heavy component (compile_stack)
COMPILE = -1.0  # the compiling stack's place in Results' keys (a size in GiB elsewhere)
COMPILE_SIDES = {"stackbuild": "stackbuild", "no-cache": "stackbuild, cache off", "dag": "DAG peer", "expert": "expert"}
COMPILE_SCENARIOS = ("cold", "touch one source", "touch header")
# The line each component build with the compile cache ends with (builder/plan/templates/build.sh.j2),
# and the expert's (dag_peer.EXPERT_DOCKERFILE).
CACHE_LINE = re.compile(r"(?:stackbuild: \S+|expert): compile cache: (\d+) hits, (\d+) misses")
LEVELS = "stackbuild-bench/levels"  # the hand-written file built one stage at a time (Bench.build_levels)
# Runs the CLI in-process, as the `stackbuild` command does (builder.__main__.entry: the collector
# paused for start-up), so the builder's own peak RSS can be read at the end.
WITH_RSS = (
    "import gc; gc.disable(); import resource, sys; from builder.cli import main; code = main(sys.argv[1:]); "
    "print(f'bench-maxrss-kb {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}', file=sys.stderr); sys.exit(code)"
)
# With --logs: every stage log line stamped with the seconds since the bench started the process
# (BENCH_STARTED, time.time()), so one build's stages can be laid on one clock.
STAMPED = (
    "import gc; gc.disable(); import os, time; import builder.execute.stage_log as stage_log; "
    "started = float(os.environ['BENCH_STARTED']); "
    "plain = stage_log.line_writer; "
    "stamped = lambda log: (lambda write: lambda line: write(f'[{time.time() - started:7.2f}] {line}'))(plain(log)); "
    "import builder.execute.stage as a, builder.execute.stage_image as b, builder.execute.stage_registry as c; "
    "a.line_writer = b.line_writer = c.line_writer = stamped; "
)
STAMP = r"(?:\[ *[\d.]+\] )?"  # a stage log line's stamp (STAMPED), when it has one
# Left out: what differs between any two builds of one side (pip stamps .pyc files with the install
# time, makeself .run archives carry their build date, CMake's logs their timings).
UNSTABLE = "! -name '*.pyc' ! -name '*.run' ! -path '*/CMakeFiles/*'"
# As a user runs it: Python caches bytecode (this machine's environment turns that off).
STACKBUILD_ENV = {"PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": ""}
TREE_DIGEST = f"cd /opt/stack && find . -type f {UNSTABLE} -print0 | sort -z | xargs -0 sha256sum | sha256sum"
# Measured (bench/RESULTS.md, "The touch-toolkit gap"): at 1 GiB on the reference (8.5 layout) the
# touch-toolkit repetitions took 19 GiB of free disk at their peak (each side's own installer, its
# install and its runtime image's install of it; stackbuild's images and the peers' BuildKit records),
# given back when the point ended. The earlier estimate (7.5, on the layout whose runtime image
# copied the toolkit's libraries alone) no longer holds.
GIB_OF_DISK_PER_TOOLKIT_GIB = 20
SAMPLE_SECONDS = 0.2
# The bench's stackbuild processes inherit this environment: their image names start with this.
PREFIX = resolve(os.environ, ROOT).image_prefix
BASELINE_ENV = "# bench: the toolkit's environment (what its set_env.sh sets, written in as ENV by the bench)"
HARNESS_SOURCE = Path("reference/harness/harness/__init__.py")
TOOLKIT_SOURCE = Path("reference/toolkit/payload/include/acl/acl.h")
# The reference stack's toolkit version (stacks/reference.yaml), which the baseline installs too
# (baseline.Dockerfile names its installer).
REFERENCE_VERSION = "8.5.0"


def sh(*cmd: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    run = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if run.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd[:5])}... failed:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
    return run


class Took(NamedTuple):
    """One timed build: its wall time, and the CPU time every core of the machine was busy meanwhile
    (the engine's, its containers' and the client's alike: on a machine whose cores are all busy,
    wall time follows it)."""

    wall: float
    busy: float


def busy_seconds() -> float:
    """CPU seconds this machine's cores spent on anything but idling and waiting, since boot (/proc/stat)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


@contextmanager
def measuring(took: list[Took]) -> Iterator[None]:
    """The block's Took, appended to took."""
    start, busy = time.monotonic(), busy_seconds()
    yield
    took.append(Took(time.monotonic() - start, busy_seconds() - busy))


def timed(action: Callable[[], object]) -> Took:
    took: list[Took] = []
    with measuring(took):
        action()
    return took[0]


def scratch_bytes(directory: Path) -> int:
    """Disk held by files under directory that are not hard links to files elsewhere (the cache's blobs)."""
    total = 0
    for path, _, files in os.walk(directory):
        for name in files:
            try:
                stat = os.lstat(os.path.join(path, name))
            except OSError:  # gone while walking
                continue
            if stat.st_nlink == 1:
                total += stat.st_blocks * 512
    return total


@contextmanager
def sampling_disk(directory: Path, peak: list[int]) -> Iterator[None]:
    """peak[0] raised to the most scratch_bytes(directory) was seen while the block ran."""
    done = threading.Event()

    def sample() -> None:
        while not done.wait(SAMPLE_SECONDS):
            peak[0] = max(peak[0], scratch_bytes(directory))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield
    finally:
        done.set()
        sampler.join()


@dataclass
class Results:
    """Timed builds by (side, size in GiB, scenario); stackbuild's peaks; what one build costs the
    engine before it does anything (Bench.per_build)."""

    times: dict[tuple[str, float, str], list[Took]] = field(default_factory=dict)
    per_build: Took | None = None
    rss_kb: dict[float, int] = field(default_factory=dict)
    disk: dict[float, int] = field(default_factory=dict)
    largest_layer: dict[float, int] = field(default_factory=dict)  # of the stage images a cold build changes
    # The compile scenarios: (side, scenario) -> each run's compile-cache (hits, misses), and the heavy
    # component's own stage build in each of stackbuild's runs (its log: context ready to image built).
    cache_stats: dict[tuple[str, str], list[tuple[int, int]]] = field(default_factory=dict)
    stage_build: dict[tuple[str, str], list[float]] = field(default_factory=dict)

    def add(self, side: str, size: float, scenario: str, took: Took) -> None:
        self.times.setdefault((side, size, scenario), []).append(took)

    def median(self, side: str, size: float, scenario: str, busy: bool = False) -> float | None:
        found = self.times.get((side, size, scenario))
        return statistics.median(t.busy if busy else t.wall for t in found) if found else None


class Bench:
    def __init__(self, root: Path, cli: str) -> None:
        self.root, self.cli = root, cli
        self.engine = connect(builder="buildkit")
        self.cache = Cache(cache_root(os.environ))
        self.results = Results()
        self.env: dict[str, dict[str, str]] = {}  # what the environment scripts set, by stage (read_env)
        # --logs: each build's stamped logs kept under logs/<NNN>-<what>-<side> (log_dir)
        self.logs: Path | None = None
        self.what = "build"  # what the builds now are, in their logs' names
        self.kept = 0

    def log_dir(self, side: str) -> Path | None:
        """Where the next build of side keeps its logs (None: not kept)."""
        if self.logs is None:
            return None
        self.kept += 1
        where = self.logs / f"{self.kept:03d}-{re.sub(r'[^a-z0-9.]+', '-', self.what.lower())}-{side}"
        where.mkdir(parents=True)
        return where

    def read_env(self, stack: str) -> None:
        """What the environment scripts set in each stage of stack's build that has them (the same at
        every toolkit size: the padding is not in the scripts), for the peers."""
        plan = plan_of(self.root, stack)
        for stage in plan.order():
            if stage.env_capture is not None:
                self.env[stage.name] = environment.read(self.engine, stage.tag(), stage.env_capture)

    def run_stackbuild(self, stack: str, *args: str, size: float = 0.0) -> Took:
        peak, took = [0], list[Took]()
        keep = self.log_dir("stackbuild") if args[:1] == ("build",) else None
        code = (STAMPED if keep else "") + WITH_RSS
        since = time.time()
        with measuring(took), sampling_disk(self.cache.root / "tmp", peak):
            env = {**STACKBUILD_ENV, "BENCH_STARTED": repr(time.time())}
            run = sh(sys.executable, "-c", code, "--root", str(self.root), *args, stack, env=env)
        if keep:  # the stage logs this build wrote (a stage found by its tag writes none)
            for log in (self.root / ".stackbuild" / "logs" / stack / Arch.host().value).glob("*.log"):
                if log.stat().st_mtime >= since:
                    shutil.copy2(log, keep / log.name)
        if match := re.search(r"bench-maxrss-kb (\d+)", run.stderr):
            self.results.rss_kb[size] = max(self.results.rss_kb.get(size, 0), int(match.group(1)))
        self.results.disk[size] = max(self.results.disk.get(size, 0), peak[0])
        return took[0]

    def build_stackbuild(self, stack: str, size: float, *options: str) -> Took:
        return self.run_stackbuild(stack, "build", "--no-smoke", *options, size=size)

    def build_expert(self, context: Path) -> tuple[Took, tuple[int, int] | None]:
        """The expert peer built (dag_peer.expert), and its compile cache's (hits, misses) this build."""
        took: list[Took] = []
        with measuring(took):
            run = sh(self.cli, "build", "--progress=plain", "-t", f"{EXPERT}:{heavy_component.NAME}", str(context),
                     env={"DOCKER_BUILDKIT": "1"})  # fmt: skip
        found = CACHE_LINE.findall(run.stdout + run.stderr)
        return took[0], (int(found[-1][0]), int(found[-1][1])) if found else None

    def build_peer(self, context: Path, tag: str) -> Took:
        keep = self.log_dir(tag.rpartition("/")[2])

        def both() -> None:
            started = time.time()
            for target in ("devel-image", "runtime-image"):
                env = {"DOCKER_BUILDKIT": "1"}
                if keep is None:
                    sh(self.cli, "build", "-q", "--target", target, "-t", f"{tag}:{target}", str(context), env=env)
                    continue
                command = [self.cli, "build", "--progress", "plain", "--target", target, "-t", f"{tag}:{target}"]
                stamped(keep / f"{target}.log", started, *command, str(context), env=env)

        return timed(both)

    def build_levels(self, context: Path, plan: Plan, edited: str | None = None) -> Took:
        """The hand-written file built in stackbuild's order: one `docker build --target` per stage
        to build (every one but the bases; after an edit, the edited stage and those above it, as
        stackbuild finds the others by their tags), a stage once its parents are built, those of one
        depth at once; nothing probed, normalised or read. What stackbuild's one build per stage
        costs before anything it adds."""
        wanted = {edited} if edited is not None else set()
        depth: dict[str, int] = {}
        levels: dict[int, list[str]] = {}
        for stage in plan.order():  # parents first
            depth[stage.name] = 1 + max((depth[p] for p in stage.parents), default=-1)
            if (edited is None and stage.kind != "base") or wanted & {stage.name, *stage.parents}:
                wanted.add(stage.name)
                levels.setdefault(depth[stage.name], []).append(stage.name)

        def one(target: str) -> None:
            sh(self.cli, "build", "-q", "--target", target, "-t", f"{LEVELS}:{target}", str(context),
               env={"DOCKER_BUILDKIT": "1"})  # fmt: skip

        def all_levels() -> None:
            for _, targets in sorted(levels.items()):
                with ThreadPoolExecutor(len(targets)) as pool:
                    list(pool.map(one, targets))

        return timed(all_levels)

    def build_classic(self, context: Path, base_image: str) -> Took:
        command = [self.cli, "build", "-q", "-f", str(context / "baseline.Dockerfile")]
        command += ["--build-arg", f"BASE={base_image}", "-t", CLASSIC, str(context)]
        return timed(lambda: sh(*command, env={"DOCKER_BUILDKIT": "0"}))

    def per_build(self, image: str, repeat: int = 5) -> Took:
        """A BuildKit build with nothing to do (FROM image, no step), the median of repeat: what every
        `docker build` costs before its first step, on every side."""
        with tempfile.TemporaryDirectory(prefix="stackbuild-bench-empty.") as empty:
            (Path(empty) / "Dockerfile").write_text(f"FROM {image}\n")
            took = [
                timed(lambda: sh(self.cli, "build", "-q", empty, env={"DOCKER_BUILDKIT": "1"})) for _ in range(repeat)
            ]
        return Took(statistics.median(t.wall for t in took), statistics.median(t.busy for t in took))

    def make_cold(self) -> None:
        """No stage image but the bases, no final tag, BuildKit's cache pruned: cold for every side."""
        for tag in self.engine.tags(repository(PREFIX, STAGES, "*")):
            if not tag.split(":")[0].endswith(("base-devel", "base-runtime")):
                self.engine.remove(tag)
        peers = (f"{PEER}*", f"{HAND}*", f"{LEVELS}*", CLASSIC.split(":")[0], EXPERT)
        for names in (repository(PREFIX, "bench*"), *peers):
            for tag in self.engine.tags(names):
                self.engine.remove(tag)
        self.prune("-af")

    def prune(self, *options: str) -> None:
        """The engine's untagged images and BuildKit's records (those options select)."""
        sh(self.cli, "builder", "prune", *options, env={"DOCKER_BUILDKIT": "1"})
        self.engine.client.images.prune(filters={"dangling": True})

    def drop_superseded(self, stack: str, unused_for: float) -> None:
        """Not timed, after a touch repetition: what its edits replaced, on every side (stackbuild's stage
        images of earlier keys, the peers' untagged images, BuildKit's records this repetition did not
        use). At 4 GiB each repetition adds a toolkit's worth of each; kept, they fill the disk."""
        locked = [name for name in (stack, SMALL) if (self.root / "lockfiles" / f"{name}.lock.json").is_file()]
        keep = {stage.tag() for name in locked for stage in plan_of(self.root, name).order()}
        for tag in self.engine.tags(repository(PREFIX, STAGES, "*")) - keep:
            self.engine.remove(tag)
        # Rounded up, and a second more: a record this repetition used in its first instant stays.
        self.prune("-f", "--filter", f"unused-for={math.ceil(unused_for) + 1}s")

    def largest_layer(self, stack: str) -> int:
        """The largest layer of the stack's stage images but the bases' (the toolkit's, padded)."""
        plan = plan_of(self.root, stack)
        sizes = [
            int(entry.get("Size") or 0)
            for stage in plan.order()
            if stage.kind != "base"
            for entry in self.engine.client.api.history(stage.tag())
        ]
        return max(sizes, default=0)

    def tree_digest(self, image: str) -> str:
        return self.engine.run(image, ["sh", "-c", TREE_DIGEST]).output.split()[0]

    def lock(self, stack: str) -> None:
        """Lock the stack (packing its toolkit), removing the installer the lock pinned before (the
        bench's own, one per edit: at 4 GiB they would fill the disk)."""
        before = installer_blobs(self.root, stack)
        self.run_stackbuild(stack, "lock", size=-1.0)  # not a build: its peaks are not reported
        self.forget(before - installer_blobs(self.root, stack))

    def forget(self, installers: set[str]) -> None:
        """The bench's own installers (by sha256) out of the cache: one per edit and size, packed by
        each run, they would fill the disk at 4 GiB."""
        for sha in installers:
            self.cache.blob(sha).unlink(missing_ok=True)

    def peers(self, stack: str) -> tuple[Path, Path]:
        """The DAG peer's and the hand-written peer's contexts for the stack as locked now."""
        return self.peer(stack, "dag"), self.peer(stack, "hand")

    def peer(self, stack: str, side: str) -> Path:
        """One peer's context (side: dag or hand) for the stack as locked now, in place of its last."""
        context = self.root / "peers" / stack / side
        shutil.rmtree(context, ignore_errors=True)
        dag_peer.compose(plan_of(self.root, stack), self.cache, context, self.env, probes=side == "dag")
        return context


def stamped(log: Path, started: float, *cmd: str, env: dict[str, str]) -> None:
    """cmd run as sh runs it, each line of its output written to log stamped with the seconds since
    started (time.time()), as it comes (BuildKit's plain progress: when each step starts and ends)."""
    with log.open("w") as out:
        process = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, **env}
        )
        assert process.stdout is not None
        for line in process.stdout:
            out.write(f"[{time.time() - started:7.2f}] {line}")
        if process.wait() != 0:
            sys.exit(f"bench: {' '.join(cmd[:5])}... failed: see {log}")


def installer_blobs(root: Path, stack: str) -> set[str]:
    """The cache blobs of the stack's packages as locked now: each package's, and the `.run` unwrapped
    from a signed catalog zip (the reference's since 8.5.0), which the cache keeps as a blob of its own."""
    path = root / "lockfiles" / f"{stack}.lock.json"
    if not path.is_file():
        return set()
    locked = lock.read(path)
    packages = {p.sha256 for section in locked.architectures.values() for p in section.packages}
    records = Cache(cache_root(os.environ)).records
    unwrapped = {str(record["run"]) for sha in packages if (record := records.read(signed.RECORDS, sha)) is not None}
    return packages | unwrapped


def plan_of(root: Path, stack: str) -> Plan:
    path = root / "stacks" / f"{stack}.yaml"
    locked = lock.read(root / "lockfiles" / f"{stack}.lock.json")
    request = Request(
        manifest.load(path), path, locked, SiteConfig(), Cache(cache_root(os.environ)), Arch.host(), image_prefix=PREFIX
    )
    return chain.plan(request, lambda _: None)


@dataclass(frozen=True)
class StageTimes:
    context: float
    build: float
    normalise: float
    probes: float
    told: float | None = None  # when a child might first start on it as built (its log's "# as built for")

    @property
    def critical(self) -> float:
        """What the stage's children wait for: they start on its image as built (it is normalised and
        probed beside them), some before its environment is added."""
        return self.told if self.told is not None else self.context + self.build


def stage_times(root: Path, stack: str, since: float) -> dict[str, StageTimes]:
    """Each stage's times in the build started at since (time.time()), from the logs it wrote (a
    cached stage writes none: an older log is an earlier build's)."""
    times = {}
    for log in sorted((root / ".stackbuild" / "logs" / stack / Arch.host().value).glob("*.log")):
        if log.stat().st_mtime < since:
            continue
        text = log.read_text()
        marks = dict(re.findall(rf"^{STAMP}# (context ready|image built|built and probed) in ([\d.]+)s", text, re.M))
        normalised = re.search(rf"^{STAMP}# normalised to \S+ in ([\d.]+)s", text, re.M)
        told = re.search(rf"^{STAMP}# as built for .* in ([\d.]+)s$", text, re.M)
        if len(marks) == 3:
            ready, built, probed = (float(marks[k]) for k in ("context ready", "image built", "built and probed"))
            normalise = float(normalised[1]) if normalised else 0.0
            probes = max(0.0, probed - built - normalise)
            times[log.stem] = StageTimes(ready, built - ready, normalise, probes, float(told[1]) if told else None)
    return times


def critical_path(plan: Plan, times: dict[str, StageTimes]) -> list[str]:
    """The chain of built stages whose critical times add up the most, parents first."""
    best: dict[str, tuple[float, list[str]]] = {}
    for stage in plan.order():
        own = times[stage.name].critical if stage.name in times else 0.0
        before = max((best[p] for p in stage.parents), default=(0.0, []), key=lambda entry: entry[0])
        best[stage.name] = (before[0] + own, [*before[1], stage.name] if stage.name in times else before[1])
    return max(best.values(), key=lambda entry: entry[0])[1]


def touch(*paths: Path) -> None:
    """The same edit to each copy of a source file."""
    line = f"\n/* bench {uuid.uuid4().hex} */\n" if paths[0].suffix == ".h" else f"\n# bench {uuid.uuid4().hex}\n"
    for path in paths:
        path.write_text(path.read_text() + line)


def stack_name(size: float) -> str:
    return SMALL if not size else f"bench{int(size * 1024)}m"


def prepare(root: Path, sizes: list[float], manifest: Path = ROOT / "stacks" / "reference.yaml") -> None:
    """The stacks under root: the manifest (one of the reference manifests) as the small stack and
    padded to each size."""
    stacks = root / "stacks"
    shutil.copytree(
        ROOT / "stacks" / "reference", stacks / "reference", ignore=shutil.ignore_patterns("build", "__pycache__")
    )
    text = manifest.read_text()  # locked for this host's architecture alone
    for size in [0.0, *sizes]:
        padded = re.sub(r"^name: .*$", f"name: {stack_name(size)}", text, count=1, flags=re.M)
        if size:
            # On the toolkit's pack.py command lines only: not the ops package's (`pack.py --kind ops`, which
            # would double the size and the runtime image's install), nor sign.py's (it takes no --pad-mb).
            pack = "reference/toolkit/pack.py --arch "
            padded = padded.replace(pack, f"reference/toolkit/pack.py --pad-mb {int(size * 1024)} --arch ")
        (stacks / f"{stack_name(size)}.yaml").write_text(padded)


def prepare_compiling(root: Path, units: int, seed: int) -> None:
    """The compile scenarios' stack (COMPILING): the small stack with the heavy component added, its
    sources generated from seed into the working stack (stacks/heavy/)."""
    stacks = root / "stacks"
    heavy_component.generate(stacks / heavy_component.NAME, units, seed)
    text = (ROOT / "stacks" / "reference.yaml").read_text().replace("name: reference", f"name: {COMPILING}")
    head, smoke, tail = text.partition("\nsmoke:")
    assert smoke, "stacks/reference.yaml has no smoke: section to add the heavy component before"
    entry = heavy_component.manifest_entry(heavy_component.NAME)
    (stacks / f"{COMPILING}.yaml").write_text(f"{head}\n{entry}{smoke}{tail}")


def sizes_that_fit(asked: list[float], free_gib: float) -> tuple[list[float], str]:
    """The sweep's sizes, the top one lowered to the most whole GiB the disk holds (at least 1) when it
    cannot hold it (and why)."""
    top = max(asked, default=0.0)
    need = GIB_OF_DISK_PER_TOOLKIT_GIB * top
    if top > 1 and free_gib < need:
        lowered = float(max(1, min(math.ceil(top) - 1, math.floor(free_gib / GIB_OF_DISK_PER_TOOLKIT_GIB))))
        kept = sorted({*(s for s in asked if s < lowered), lowered})
        short = f"{free_gib:.0f} GiB free, short of the {need:.0f} GiB a {top:g} GiB point needs"
        return kept, f"{short}: {lowered:g} GiB is the top"
    return asked, ""


def free_gib(engine: DockerEngine) -> float:
    """Free disk where the sweep writes most: the engine's data root (both sides' images and BuildKit's
    cache) or the stack cache (the packed installers), whichever has less."""
    data_root = Path(engine.client.info()["DockerRootDir"])
    return min(shutil.disk_usage(where).free for where in (data_root, cache_root(os.environ).parent)) / 2**30


def say(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def small_stack(bench: Bench, repeat: int) -> tuple[bool, list[str], dict[str, StageTimes]]:
    """The small stack's scenarios on every side; whether both give the same tree, stackbuild's
    critical path and stage times in its last cold run."""
    root, results = bench.root, bench.results
    dag, hand = bench.peers(SMALL)
    plan = plan_of(root, SMALL)
    base_image = plan.stages["base-devel"].tag()
    baseline = (ROOT / "bench" / "baseline.Dockerfile").read_text()
    toolkit_env = "ENV " + " \\\n    ".join(
        f"{name}={json.dumps(value)}" for name, value in sorted(bench.env["toolkit"].items())
    )
    (root / "stacks" / "baseline.Dockerfile").write_text(baseline.replace(BASELINE_ENV, toolkit_env))
    # The reference stack's toolkit version (the layout its ENV, baked in above, names).
    sh(sys.executable, str(root / "stacks" / "reference" / "toolkit" / "pack.py"), "--arch", Arch.host().value,
       "--version", REFERENCE_VERSION, "--output-dir", str(root / "stacks" / "dist"))  # fmt: skip
    times: dict[str, StageTimes] = {}
    for n in range(repeat):
        say(f"small stack, cold, repetition {n + 1}/{repeat}")
        bench.make_cold()
        since = time.time()
        results.add("stackbuild", 0.0, "cold", bench.build_stackbuild(SMALL, 0.0))
        times = stage_times(root, SMALL, since)
        for side, context, tag in (("dag", dag, PEER), ("hand", hand, HAND)):
            bench.make_cold()
            results.add(side, 0.0, "cold", bench.build_peer(context, tag))
        bench.make_cold()
        results.add("levels", 0.0, "cold", bench.build_levels(hand, plan))
        bench.make_cold()
        results.add("classic", 0.0, "cold", bench.build_classic(root / "stacks", base_image))
    for context, tag in ((dag, PEER), (hand, HAND)):
        bench.build_peer(context, tag)
    bench.build_levels(hand, plan)
    bench.build_stackbuild(SMALL, 0.0)
    same = bench.tree_digest(plan.final_tags["devel-image"]) == bench.tree_digest(f"{PEER}:devel-image")
    for n in range(repeat):
        say(f"small stack, no-op and touch-harness, repetition {n + 1}/{repeat}")
        results.add("stackbuild", 0.0, "no-op", bench.build_stackbuild(SMALL, 0.0))
        results.add("dag", 0.0, "no-op", bench.build_peer(dag, PEER))
        results.add("hand", 0.0, "no-op", bench.build_peer(hand, HAND))
        results.add("classic", 0.0, "no-op", bench.build_classic(root / "stacks", base_image))
        touch(root / "stacks" / HARNESS_SOURCE, dag / "harness" / "src" / "harness" / "__init__.py",
              hand / "harness" / "src" / "harness" / "__init__.py")  # fmt: skip
        results.add("stackbuild", 0.0, "touch harness", bench.build_stackbuild(SMALL, 0.0))
        results.add("dag", 0.0, "touch harness", bench.build_peer(dag, PEER))
        results.add("hand", 0.0, "touch harness", bench.build_peer(hand, HAND))
        # An edit of its own: BuildKit would find the hand-written peer's build of the same bytes.
        touch(hand / "harness" / "src" / "harness" / "__init__.py")
        results.add("levels", 0.0, "touch harness", bench.build_levels(hand, plan, edited="harness"))
        results.add("classic", 0.0, "touch harness", bench.build_classic(root / "stacks", base_image))
    return same, critical_path(plan, times), times


def touch_toolkit(bench: Bench, stack: str, size: float, sides: dict[str, tuple[Path, str]]) -> None:
    """An edit to the toolkit's payload for each side, each packed (not timed), then each side rebuilt.

    Each side builds an installer no other side has built. BuildKit keys a step by the content of the
    files it mounts or copies, not by where they are: given the same installer, the hand-written peer's
    install steps were the DAG peer's, built a moment before (CACHED in its progress), and the peers'
    runtime image took its copy of the toolkit's tree from stackbuild's (bench/RESULTS.md, "The
    touch-toolkit gap"). The peers' edits come first and stackbuild's last: the stack stays locked
    as stackbuild built it, and each peer's context keeps its own installer for the touches after."""
    for side in sides:
        touch(bench.root / "stacks" / TOOLKIT_SOURCE)
        bench.lock(stack)
        bench.peer(stack, side)
    touch(bench.root / "stacks" / TOOLKIT_SOURCE)
    bench.lock(stack)
    bench.results.add("stackbuild", size, "touch toolkit", bench.build_stackbuild(stack, size))
    for side, (context, tag) in sides.items():
        bench.results.add(side, size, "touch toolkit", bench.build_peer(context, tag))


def sweep_point(bench: Bench, size: float, repeat: int) -> None:
    """Cold, touch-harness, then touch-toolkit at one toolkit size, stackbuild and both peers."""
    stack, results = stack_name(size), bench.results
    say(f"{size:g} GiB: locking (packs the padded toolkit, not timed)")
    bench.lock(stack)
    dag, hand = bench.peers(stack)
    sides = {"dag": (dag, f"{PEER}-{stack}"), "hand": (hand, f"{HAND}-{stack}")}
    for n in range(repeat):
        say(f"{size:g} GiB: cold, repetition {n + 1}/{repeat}")
        bench.make_cold()
        results.add("stackbuild", size, "cold", bench.build_stackbuild(stack, size))
        results.largest_layer[size] = bench.largest_layer(stack)  # before make_cold removes the stages
        for side, (context, tag) in sides.items():
            bench.make_cold()
            results.add(side, size, "cold", bench.build_peer(context, tag))
    for context, tag in sides.values():
        bench.build_peer(context, tag)
    bench.build_stackbuild(stack, size)
    # Every harness touch before the first toolkit touch: that one leaves each side's installer edited
    # its own way, and a harness touch after it found the peers' contexts holding bytes their last
    # build had not seen (bench/RESULTS.md, "The rest of that run").
    for n in range(repeat):
        say(f"{size:g} GiB: touch-harness, repetition {n + 1}/{repeat}")
        started = time.monotonic()
        dag, hand = bench.root / "peers" / stack / "dag", bench.root / "peers" / stack / "hand"
        touch(bench.root / "stacks" / HARNESS_SOURCE, dag / "harness" / "src" / "harness" / "__init__.py",
              hand / "harness" / "src" / "harness" / "__init__.py")  # fmt: skip
        results.add("stackbuild", size, "touch harness", bench.build_stackbuild(stack, size))
        for side, (_, tag) in sides.items():
            results.add(side, size, "touch harness", bench.build_peer(bench.root / "peers" / stack / side, tag))
        bench.drop_superseded(stack, time.monotonic() - started)
    for n in range(repeat):
        say(f"{size:g} GiB: touch-toolkit, repetition {n + 1}/{repeat}")
        started = time.monotonic()
        touch_toolkit(bench, stack, size, sides)
        bench.drop_superseded(stack, time.monotonic() - started)
    bench.make_cold()


def cache_line(root: Path, stack: str, component: str, since: float) -> tuple[int, int] | None:
    """The compile cache's (hits, misses) in component's build started at since, from its stage log
    (none when the stage was not built then, or built without the cache)."""
    log = root / ".stackbuild" / "logs" / stack / Arch.host().value / f"{component}.log"
    if not log.is_file() or log.stat().st_mtime < since:
        return None
    found = CACHE_LINE.findall(log.read_text())
    return (int(found[-1][0]), int(found[-1][1])) if found else None


class Compiling(NamedTuple):
    """The compile scenarios' sides' contexts: the DAG peer's and the expert's; units: the heavy
    component's translation units."""

    dag: Path
    expert: Path
    units: int

    def copy(self, root: Path, side: str) -> Path:
        """The heavy component's tree the side builds (stackbuild's is the working stack's)."""
        return {
            "stackbuild": root / "stacks" / heavy_component.NAME,
            "no-cache": root / "stacks" / heavy_component.NAME,
            "dag": self.dag / heavy_component.NAME / "src",
            "expert": self.expert / heavy_component.NAME,
        }[side]


def compile_build(bench: Bench, compiling: Compiling, side: str, scenario: str) -> None:
    """One timed build of the compiling stack on side; its compile-cache statistics and the heavy
    stage's own build time, where the side has them."""
    results, since = bench.results, time.time()
    stats: tuple[int, int] | None = None
    if side in ("stackbuild", "no-cache"):
        options = ("--no-compile-cache",) if side == "no-cache" else ()
        results.add(side, COMPILE, scenario, bench.build_stackbuild(COMPILING, COMPILE, *options))
        stats = cache_line(bench.root, COMPILING, heavy_component.NAME, since)
        if stage := stage_times(bench.root, COMPILING, since).get(heavy_component.NAME):
            results.stage_build.setdefault((side, scenario), []).append(stage.build)
    elif side == "dag":
        results.add(side, COMPILE, scenario, bench.build_peer(compiling.dag, f"{PEER}-{COMPILING}"))
    else:
        took, stats = bench.build_expert(compiling.expert)
        results.add(side, COMPILE, scenario, took)
    if stats is not None:
        results.cache_stats.setdefault((side, scenario), []).append(stats)


def compile_stack(bench: Bench, units: int, repeat: int) -> None:
    """Cold, touch one source and touch the widely included header of the heavy component, on every
    side of COMPILE_SIDES, each repetition of a scenario on every side in turn."""
    root, stack = bench.root, COMPILING
    say(f"compiling: locking and building once ({units} units; g++, the compile cache's tool image; not timed)")
    bench.lock(stack)
    bench.build_stackbuild(stack, COMPILE)
    bench.read_env(stack)
    dag, _ = bench.peers(stack)
    plan, locked = plan_of(root, stack), lock.read(root / "lockfiles" / f"{stack}.lock.json")
    system = locked.architectures[Arch.host()].system
    expert = root / "peers" / stack / "expert"
    debs = [*system.components[heavy_component.NAME], *system.compile_cache]  # g++'s, then ccache's
    source = root / "stacks" / heavy_component.NAME
    dag_peer.expert(plan.stages["base-devel"].tag(), debs, bench.cache, source, heavy_component.BUILD, expert)
    compiling = Compiling(dag, expert, units)
    for n in range(repeat):
        say(f"compiling: cold, repetition {n + 1}/{repeat}")
        for side in ("no-cache", "dag", "expert", "stackbuild"):  # stackbuild's build and cache stay for the touches
            bench.make_cold()
            compile_build(bench, compiling, side, "cold")
    bench.build_peer(dag, f"{PEER}-{stack}")
    bench.build_expert(expert)
    edited = (("touch one source", heavy_component.touched_source(units)), ("touch header", heavy_component.HEADER))
    for n in range(repeat):
        say(f"compiling: touch one source and touch header, repetition {n + 1}/{repeat}")
        started = time.monotonic()
        for scenario, path in edited:
            for side in COMPILE_SIDES:
                source = compiling.copy(root, side) / path
                before = source.read_text()
                heavy_component.edit(source)  # an edit of each side's own: none finds another's build
                compile_build(bench, compiling, side, scenario)
                if side == "no-cache":  # back to what stackbuild's compile cache last saw (its tags are there)
                    source.write_text(before)
        bench.drop_superseded(stack, time.monotonic() - started)
    bench.make_cold()


def touch_toolkit_only(bench: Bench, size: float, repeat: int) -> None:
    """--only touch-toolkit: that scenario alone at one size, every side built once first (not timed)."""
    stack = stack_name(size)
    say(f"{size:g} GiB: locking (packs the padded toolkit, not timed)")
    bench.lock(stack)
    dag, hand = bench.peers(stack)
    sides = {"dag": (dag, f"{PEER}-{stack}"), "hand": (hand, f"{HAND}-{stack}")}
    bench.what = f"{size:g}gib first build"
    for context, tag in sides.values():
        bench.build_peer(context, tag)
    bench.build_stackbuild(stack, size)
    for n in range(repeat):
        say(f"{size:g} GiB: touch-toolkit, repetition {n + 1}/{repeat}")
        bench.what = f"{size:g}gib touch toolkit {n + 1}"
        started = time.monotonic()
        touch_toolkit(bench, stack, size, sides)
        bench.drop_superseded(stack, time.monotonic() - started)
    bench.make_cold()


def report_touch_toolkit(results: Results, sizes: list[float], markdown: bool) -> None:
    header = ("toolkit", "stackbuild (s)", "DAG peer (s)", "ratio", "hand-written (s)", "ratio")
    header += ("stackbuild (CPU s)", "DAG peer (CPU s)", "hand-written (CPU s)", "each side's runs (s)")
    rows = []
    for size in sizes:
        sb, dag, hand = (results.median(side, size, "touch toolkit") for side in ("stackbuild", "dag", "hand"))
        busy = (fmt(results.median(side, size, "touch toolkit", busy=True)) for side in ("stackbuild", "dag", "hand"))
        runs = "; ".join(
            " ".join(f"{t.wall:.2f}" for t in results.times.get((side, size, "touch toolkit"), []))
            for side in ("stackbuild", "dag", "hand")
        )
        rows.append((f"{size:g} GiB", fmt(sb), fmt(dag), ratio(sb, dag), fmt(hand), ratio(sb, hand), *busy, runs))
    print("\n".join(["Touch toolkit (one payload file edited, the installer packed again before timing):", ""]))
    print("\n".join(table(header, rows, markdown)))


def second_machine(bench: Bench, stack: str, repeat: int) -> list[float]:
    """Daemon B, a second Docker daemon with an empty image store, builds the stack from a loopback
    registry that this daemon (A) filled with every stage: the wall times of B's builds."""
    times = []
    with registry(bench.root / "registry" / stack) as address:
        cache = f"{address}/bench/cache"
        bench.run_stackbuild(stack, "build", "--no-smoke", "--cache-to", cache)  # A pushes every stage
        daemon = SecondDaemon(Path(tempfile.mkdtemp(prefix="sb-bench-", dir="/tmp")))  # a short socket path
        daemon.start()
        try:
            machine_b = connect(daemon.host)
            for _ in range(repeat):
                for tag in machine_b.tags(repository(PREFIX, STAGES, "*")) | machine_b.tags(repository(PREFIX, stack)):
                    machine_b.remove(tag)
                machine_b.client.images.prune(filters={"dangling": False})
                env = {**STACKBUILD_ENV, "DOCKER_HOST": daemon.host}
                start = time.monotonic()
                sh(sys.executable, "-m", "builder", "--root", str(bench.root), "build", "--no-smoke", "--cache-from",
                   cache, stack, env=env)  # fmt: skip
                times.append(time.monotonic() - start)
        finally:
            daemon.remove()
            shutil.rmtree(daemon.base, ignore_errors=True)
    return times


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="repetitions per scenario (medians reported)")
    parser.add_argument("--sizes", default="0.25,1,4", help="toolkit sizes of the sweep in GiB ('' skips it)")
    parser.add_argument("--second-gib", type=float, default=1.0, help="the second machine's heavy run (0: skip it)")
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    parser.add_argument("--plot", type=Path, help="write a PNG of time against toolkit size (needs matplotlib)")
    parser.add_argument("--compile-units", type=int, default=heavy_component.UNITS,
                        help="the heavy C++ component's translation units (0: skip the compile scenarios)")  # fmt: skip
    parser.add_argument("--compile-seed", type=int, default=heavy_component.SEED, help="the seed its sources come from")
    parser.add_argument("--compile-plot", type=Path, help="write a PNG of the touch-one-source times per side")
    parser.add_argument(
        "--only",
        choices=["compile", "touch-toolkit"],
        help="those scenarios alone (no small stack, no second machine): compile (the compile scenarios), "
        "touch-toolkit (that scenario at each of --sizes)",
    )
    parser.add_argument(
        "--logs",
        type=Path,
        help="keep each build's logs here, lines stamped with the seconds since it started: stackbuild's "
        "stage logs, the peers' BuildKit progress (plain)",
    )
    parser.add_argument(
        "--manifest",
        type=Path,
        default=ROOT / "stacks" / "reference.yaml",
        help="with --only: the reference manifest to build (stacks/reference-8.3.yaml: the pre-8.5 layout)",
    )
    args = parser.parse_args()
    if args.only == "compile" and args.compile_units < 1:
        parser.error("--only compile needs --compile-units of at least 1")
    if args.manifest != parser.get_default("manifest") and not args.only:
        parser.error("--manifest goes with --only (the small stack's classic peer installs reference's toolkit)")
    return args


def main() -> int:
    args = arguments()
    cli = buildkit.find_cli()
    if cli is None:
        sys.exit("bench: no docker CLI with BuildKit here (install docker.io)")
    asked = [] if args.only == "compile" else sorted(float(s) for s in args.sizes.split(",") if s.strip())
    sizes, disk_note = sizes_that_fit(asked, free_gib(connect(builder="buildkit")))
    if disk_note:
        say(disk_note)
    # Set against that size's cold build (--only builds none).
    if args.second_gib and args.second_gib not in sizes and sizes and not args.only:
        built = ", ".join(f"{size:g}" for size in sizes)
        sys.exit(f"bench: --second-gib {args.second_gib:g} is not a size the sweep builds ({built}); 0 skips it")
    with tempfile.TemporaryDirectory(prefix="stackbuild-bench.") as tmp:
        root = Path(tmp)
        prepare(root, sizes, args.manifest)
        if args.compile_units and args.only != "touch-toolkit":
            prepare_compiling(root, args.compile_units, args.compile_seed)
        bench = Bench(root, cli)
        bench.logs = args.logs
        if args.only == "touch-toolkit":
            say("locking and building once (bases, not timed)")
            bench.lock(SMALL)
            bench.build_stackbuild(SMALL, 0.0)
            bench.read_env(SMALL)
            try:
                for size in sizes:
                    touch_toolkit_only(bench, size, args.repeat)
            finally:
                bench.forget({sha for size in sizes for sha in installer_blobs(root, stack_name(size))})
                bench.make_cold()
            report_touch_toolkit(bench.results, sizes, args.markdown)
            return 0
        small = None if args.only == "compile" else small_and_second(bench, args.repeat)
        stopped = sweep_and_compile(bench, sizes, small.second if small else {}, args)
        bench.make_cold()
        report(bench, small, sizes, "; ".join(filter(None, (disk_note, stopped))), args)
        if args.plot:
            plot(bench.results, sizes, args.plot)
        if args.compile_plot and args.compile_units:
            compile_plot(bench.results, args.compile_units, args.compile_plot)
    return 1 if stopped else 0


def sweep_and_compile(
    bench: Bench, sizes: list[float], second: dict[float, list[float]], args: argparse.Namespace
) -> str:
    """The size sweep (and the second machine at --second-gib, into second), then the compile scenarios;
    what stopped them, if anything did ("": nothing)."""
    where = "the sweep"
    try:
        for size in sizes:
            where = f"the sweep at {size:g} GiB"
            sweep_point(bench, size, args.repeat)
            if size == args.second_gib:
                say(f"second machine at {size:g} GiB ({args.repeat}x)")
                second[size] = second_machine(bench, stack_name(size), args.repeat)
                bench.make_cold()
        where = "the compile scenarios"
        if args.compile_units:
            compile_stack(bench, args.compile_units, args.repeat)
    except (SystemExit, KeyboardInterrupt) as halted:  # a build failed (a full disk) or ^C: what was measured stays
        return stopped_by(halted, where)
    finally:
        bench.forget({sha for size in sizes for sha in installer_blobs(bench.root, stack_name(size))})
    return ""


class SmallStack(NamedTuple):
    """What the small stack's scenarios report beside their times (small_stack) and the second
    machine's wall times by toolkit size (0: the small stack)."""

    same: bool
    path: list[str]
    times: dict[str, StageTimes]
    second: dict[float, list[float]]


def small_and_second(bench: Bench, repeat: int) -> SmallStack:
    """The small stack locked and built once (not timed), its scenarios, then the second machine's."""
    say("locking and building once (bases, not timed)")
    bench.lock(SMALL)
    bench.build_stackbuild(SMALL, 0.0)
    bench.read_env(SMALL)
    bench.results.per_build = bench.per_build(plan_of(bench.root, SMALL).stages["base-devel"].tag())
    same, path, times = small_stack(bench, repeat)
    say(f"second machine, small stack ({repeat}x)")
    return SmallStack(same, path, times, {0.0: second_machine(bench, SMALL, repeat)})


def stopped_by(halted: SystemExit | KeyboardInterrupt, where: str) -> str:
    """What the report says of a run a failed build (a full disk) or ^C stopped in where."""
    failure = str(halted.code) if isinstance(halted, SystemExit) else "interrupted"
    say(failure)  # whole: the failed build's own lines
    lines = [line.strip() for line in failure.splitlines() if line.strip()]
    reason = [line for line in lines if not line.startswith("bench-maxrss-kb")][-1:] or ["no output"]
    stopped = f"{where} stopped ({reason[0][:200]}); its later figures are missing"
    say(stopped)
    return stopped


def qemu_emulators() -> int:
    """How many qemu binfmt_misc handlers are enabled on this machine (they run foreign binaries)."""
    enabled = 0
    for entry in Path("/proc/sys/fs/binfmt_misc").glob("qemu-*"):
        with suppress(OSError):
            enabled += entry.read_text().startswith("enabled")
    return enabled


def fmt(value: float | None) -> str:
    return f"{value:.2f}" if value is not None else "-"


def ratio(value: float | None, base: float | None) -> str:
    return f"{value / base:.2f}x" if value is not None and base else "-"


def report(bench: Bench, small: SmallStack | None, sizes: list[float], note: str, args: argparse.Namespace) -> None:
    results = bench.results
    info = bench.engine.client.info()
    machine = (
        f"{platform.machine()}, {os.cpu_count()} cores, {info['MemTotal'] / 2**30:.0f} GiB, "
        f"Docker {info['ServerVersion']} ({info['Driver']}), Python {platform.python_version()}"
    )
    lines = [f"machine: {machine}", f"medians of {args.repeat} runs, wall time of the whole process", ""]
    if small is not None:
        lines += small_lines(results, args.markdown)
    if sizes:
        lines += sweep_lines(results, sizes, args.markdown)
    if note and (sizes or not args.compile_units):
        lines += ["", f"Note: {note}."]
    if small is not None:
        lines += path_lines(results, small, args.markdown)
        lines += peaks_lines(results, small.second, sizes)
    if args.compile_units:
        lines += compile_lines(results, args)
        if note and not sizes:
            lines += ["", f"Note: {note}."]
    print("\n".join(lines))


def small_lines(results: Results, markdown: bool) -> list[str]:
    """The small stack's tables: wall times against every peer, then busy CPU time."""
    header = ("scenario", "stackbuild (s)", "DAG peer (s)", "ratio", "hand-written (s)", "ratio", "classic linear (s)")
    header += ("hand-written, one build per stage (s)", "ratio to hand-written")
    rows = []
    for scenario in ("cold", "touch harness", "no-op"):
        sb, dag, hand = (results.median(side, 0.0, scenario) for side in ("stackbuild", "dag", "hand"))
        classic, levels = results.median("classic", 0.0, scenario), results.median("levels", 0.0, scenario)
        against_peers = (fmt(sb), fmt(dag), ratio(sb, dag), fmt(hand), ratio(sb, hand))
        rows.append((scenario, *against_peers, fmt(classic), fmt(levels), ratio(levels, hand)))
    lines = ["Small stack (the reference toolkit, unpadded):", "", *table(header, rows, markdown)]
    header = (
        "scenario",
        "stackbuild (CPU s)",
        "DAG peer (CPU s)",
        "hand-written (CPU s)",
        "one build per stage (CPU s)",
    )
    rows = [
        (
            scenario,
            *(fmt(results.median(side, 0.0, scenario, busy=True)) for side in ("stackbuild", "dag", "hand", "levels")),
        )
        for scenario in ("cold", "touch harness", "no-op")
    ]
    lines += ["", f"The same builds' busy CPU time, every core of the machine ({os.cpu_count()} cores):", ""]
    lines += table(header, rows, markdown)
    if results.per_build is not None:
        emulators = qemu_emulators()
        lines += [
            "",
            f"A BuildKit build with nothing to do (FROM a base, no step): {results.per_build.wall:.2f} s and "
            f"{results.per_build.busy:.2f} CPU s, paid by every `docker build` ({emulators} qemu emulators registered)",
        ]
    return lines


def sweep_lines(results: Results, sizes: list[float], markdown: bool) -> list[str]:
    header = ("toolkit", "scenario", "stackbuild (s)", "DAG peer (s)", "ratio", "hand-written (s)", "ratio")
    header += ("stackbuild (CPU s)", "DAG peer (CPU s)", "hand-written (CPU s)")
    rows = []
    for size in sizes:
        for scenario in ("cold", "touch toolkit", "touch harness"):
            sb, dag, hand = (results.median(side, size, scenario) for side in ("stackbuild", "dag", "hand"))
            busy = (fmt(results.median(side, size, scenario, busy=True)) for side in ("stackbuild", "dag", "hand"))
            against_peers = (fmt(sb), fmt(dag), ratio(sb, dag), fmt(hand), ratio(sb, hand))
            rows.append((f"{size:g} GiB", scenario, *against_peers, *busy))
    return ["", "Size sweep (the toolkit padded):", "", *table(header, rows, markdown)]


def path_lines(results: Results, small: SmallStack, markdown: bool) -> list[str]:
    """stackbuild's critical path and stage times in the last small cold run; whether the trees match."""
    times, path = small.times, small.path
    stages = [(name, *(f"{v:.2f}" for v in (t.context, t.build, t.normalise, t.probes))) for name, t in times.items()]
    on_path = [times[name] for name in path]
    parts = {
        "contexts": sum(t.context for t in on_path),
        "builds, until the next stage may start on each (the last: with its environment)": sum(
            t.critical - t.context for t in on_path
        ),
        "normalising the last stage on the path": on_path[-1].normalise if on_path else 0.0,
    }
    wall = results.times[("stackbuild", 0.0, "cold")][-1].wall
    rest = "the rest (start-up, planning, bases checked, the last stage waiting for its parents' normalising, tags)"
    parts[rest] = wall - sum(parts.values())
    lines = ["", f"stackbuild's critical path in the last small cold run ({wall:.2f} s): {' -> '.join(path)}", ""]
    lines += table(("part", "seconds"), [(part, f"{value:.2f}") for part, value in parts.items()], markdown)
    lines += ["", "Its stages in that run:", ""]
    lines += table(("stage", "context (s)", "build (s)", "normalise (s)", "probes (s)"), stages, markdown)
    same = "yes" if small.same else "NO"
    return [*lines, "", f"same /opt/stack tree in both devel images (but .pyc, .run, CMakeFiles): {same}"]


def peaks_lines(results: Results, second: dict[float, list[float]], sizes: list[float]) -> list[str]:
    """stackbuild's peak RSS and temporary disk by size; the second machine's pulls."""
    lines = []
    for size in [0.0, *sizes]:
        if size in results.rss_kb:
            largest = results.largest_layer.get(size)
            against = f" (the largest layer a cold build changes: {largest / 2**20:.0f} MiB)" if largest else ""
            lines.append(
                f"stackbuild at {size:g} GiB: peak RSS {results.rss_kb[size] / 1024:.0f} MiB, peak temporary disk "
                f"{results.disk.get(size, 0) / 2**20:.1f} MiB{against}"
            )
    for size, pulled in second.items():
        cold = results.median("stackbuild", size, "cold")
        lines.append(
            f"second machine at {size:g} GiB (daemon B, empty, every stage from a loopback registry A filled): "
            f"{statistics.median(pulled):.2f} s, against A's cold build {fmt(cold)} s"
        )
    return lines


def hits(results: Results, side: str, scenario: str) -> str:
    """Each run's compile-cache hits/misses on side, in order ("-": no statistics, the cache off)."""
    return ", ".join(f"{h}/{m}" for h, m in results.cache_stats.get((side, scenario), [])) or "-"


def compile_lines(results: Results, args: argparse.Namespace) -> list[str]:
    """The compile scenarios' table (every side, wall and CPU time, cache hits), the heavy stage's own
    build times, and the figures issue 54 asks for."""
    sides = list(COMPILE_SIDES)
    header = ("scenario", *(f"{COMPILE_SIDES[side]} (s)" for side in sides))
    header += (*(f"{COMPILE_SIDES[side]} (CPU s)" for side in sides), "ccache hits/misses: stackbuild", "expert")
    rows = [
        (
            scenario,
            *(fmt(results.median(side, COMPILE, scenario)) for side in sides),
            *(fmt(results.median(side, COMPILE, scenario, busy=True)) for side in sides),
            hits(results, "stackbuild", scenario),
            hits(results, "expert", scenario),
        )
        for scenario in COMPILE_SCENARIOS
    ]
    units, cores = args.compile_units, os.cpu_count()
    about = f"{units} units and main.cpp, seed {args.compile_seed}, make -j{cores}"
    lines = ["", f"Compiling: the small stack with a generated C++ component ({about}), cold and touched:", ""]
    lines += table(header, rows, args.markdown)
    stage = {key: statistics.median(found) for key, found in results.stage_build.items()}
    rows = [
        (scenario, *(fmt(stage.get((side, scenario))) for side in ("stackbuild", "no-cache")))
        for scenario in COMPILE_SCENARIOS
    ]
    lines += ["", "The heavy component's own stage in those builds (its log: context ready to image built):", ""]
    lines += table(("scenario", "stackbuild (s)", "stackbuild, cache off (s)"), rows, args.markdown)
    if COMPILE in results.rss_kb:
        lines += [
            "",
            f"stackbuild on that stack: peak RSS {results.rss_kb[COMPILE] / 1024:.0f} MiB, peak temporary disk "
            f"{results.disk.get(COMPILE, 0) / 2**20:.1f} MiB",
        ]
    return lines + compile_findings(results, stage)


def compile_findings(results: Results, stage: dict[tuple[str, str], float]) -> list[str]:
    """What issue 54 asks of the compile scenarios, as measured."""
    touched = results.median("stackbuild", COMPILE, "touch one source")
    cold = results.median("stackbuild", COMPILE, "cold")
    expert = results.median("expert", COMPILE, "touch one source")
    header, off = (results.median(side, COMPILE, "touch header") for side in ("stackbuild", "no-cache"))
    own, own_cold = stage.get(("stackbuild", "touch one source")), stage.get(("stackbuild", "cold"))
    apart = f"{touched - expert:+.2f} s" if touched is not None and expert is not None else "-"
    return [
        "",
        f"- touch one source: stackbuild {fmt(touched)} s, {ratio(touched, cold)} its cold build ({fmt(cold)} s; "
        f"issue 54 asks at most 0.2x); the heavy stage alone {fmt(own)} s, {ratio(own, own_cold)} its cold build "
        f"({fmt(own_cold)} s); {apart} against the expert peer ({fmt(expert)} s; asked: within 2 s)",
        f"- touch header: stackbuild {fmt(header)} s against {fmt(off)} s with the cache off, {ratio(header, off)} "
        "(asked: at most 1.10x)",
    ]


def table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]], markdown: bool) -> list[str]:
    if markdown:
        return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
            "| " + " | ".join(row) + " |" for row in rows
        ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in [header, *rows]]


def plot(results: Results, sizes: list[float], out: Path) -> None:
    """Time against toolkit size, one line per side and scenario (the small stack at 0 GiB)."""
    import matplotlib  # the bench session installs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 5))
    points = [0.0, *sizes]
    for scenario, colour in (("cold", "tab:blue"), ("touch toolkit", "tab:orange"), ("touch harness", "tab:green")):
        for side, style, name in (("stackbuild", "-", "stackbuild"), ("dag", "--", "BuildKit DAG peer")):
            values = [(x, results.median(side, x, scenario)) for x in points]
            xs, ys = [x for x, y in values if y is not None], [y for _, y in values if y is not None]
            axes.plot(xs, ys, style, color=colour, marker="o", label=f"{scenario}: {name}")
    axes.set_xlabel("toolkit size (GiB)")
    axes.set_ylabel("wall time (s), median")
    axes.set_title("Build time against toolkit size (reference stack)")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(out, dpi=100)


def compile_plot(results: Results, units: int, out: Path) -> None:
    """The touch-one-source times per side: a bar each (the median), each run a dot; each side's cold
    build (median) under its name, for scale."""
    import matplotlib  # the bench session installs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 5))
    names = []
    for x, (side, name) in enumerate(COMPILE_SIDES.items()):
        names.append(f"{name}\n(cold {fmt(results.median(side, COMPILE, 'cold'))} s)")
        touched = results.median(side, COMPILE, "touch one source")
        if touched is None:
            continue
        axes.bar(x, touched, 0.6, color="tab:blue")
        runs = [took.wall for took in results.times[(side, COMPILE, "touch one source")]]
        axes.plot([x] * len(runs), runs, "k.", markersize=5)
        axes.annotate(f"{touched:.2f} s", (x, max(runs)), xytext=(0, 4), textcoords="offset points", ha="center")
    axes.set_xticks(range(len(names)), names)
    axes.set_ylabel("wall time (s): the median, and each run")
    axes.set_title(f"Touch one source of the generated {units}-unit C++ component (small stack with it)")
    axes.grid(True, axis="y", alpha=0.3)
    figure.tight_layout()
    figure.savefig(out, dpi=100)


if __name__ == "__main__":
    sys.exit(main())
