"""The builds this cache saw: one record per build, naming every stage image and cached input it used.
`stackbuild gc` keeps what the last builds of each stack used. The records live in the cache, shared
by every checkout that builds with it, so another checkout's builds count too."""

from __future__ import annotations

import contextlib
import datetime
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass

from builder.execute.bundle import git_sources
from builder.lock.system import every_deb
from builder.plan.plan_model import Plan
from builder.plan.prepare import Request
from builder.store.cache import Cache

RUN_KIND = "runs"
RUN_NAME = re.compile(r"^(\d+)-\d+$")  # <start ns>-<pid>
# Shared by every running build, taken alone by gc: gc never removes what a build is using.
BUILDS_LOCK = "builds"


@dataclass(frozen=True)
class BuildRun:
    name: str  # the record's name: <stack>/<arch>/<start ns>-<pid>, in start order within a stack
    stack: str
    arch: str
    images: frozenset[str]  # stage tags
    keys: frozenset[str]  # their keys (a pending image of the stage has the same key)
    blobs: frozenset[str]  # sha256 of the cached inputs: toolkit packages, base tarballs, .debs, wheels
    git: frozenset[str]  # git mirrors, by directory name in the cache

    @property
    def started(self) -> float:
        """When the build began (its record's name holds the time in nanoseconds)."""
        return int(self.name.rpartition("/")[2].partition("-")[0]) / 1e9


def record_run(plan: Plan, request: Request) -> None:
    """Before the build runs: a build that fails or is killed used its images too."""
    lock, cache, arch = request.lock, request.cache, request.arch
    section = lock.section(arch)
    blobs = {p.sha256 for p in section.packages} | {t.sha256 for t in section.base.values()}
    system = section.system
    blobs |= {d.sha256 for d in every_deb(system)}  # the compile cache's too: gc --inputs keeps them
    blobs |= {w.sha256 for wheels in section.python.values() for w in wheels}
    mirrors = {cache.git_mirror(fetch_url).name for _, fetch_url, _ in git_sources(lock, request.site)}
    record = {
        "stack": plan.stack,
        "arch": plan.arch.value,
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "stages": {stage.name: stage.tag() for stage in plan.order()},
        "blobs": sorted(blobs),
        "git": sorted(mirrors),
    }
    cache.records.write(record, RUN_KIND, plan.stack.lower(), plan.arch.value, f"{time.time_ns()}-{os.getpid()}")


@contextlib.contextmanager
def running_build(cache: Cache) -> Iterator[None]:
    with cache.locks.shared(BUILDS_LOCK):
        yield


def build_runs(cache: Cache) -> list[BuildRun]:
    """Every recorded build, oldest first within each stack and architecture."""
    runs = []
    for name, data in cache.records.every(RUN_KIND).items():
        stages = data.get("stages")
        if not isinstance(stages, dict) or not RUN_NAME.match(name.rpartition("/")[2]):
            continue  # not a record this version wrote: it protects nothing
        tags = frozenset(str(tag) for tag in stages.values())
        runs.append(
            BuildRun(
                name,
                str(data.get("stack")),
                str(data.get("arch")),
                tags,
                frozenset(tag.rpartition(":")[2] for tag in tags),
                frozenset(str(b) for b in data.get("blobs") or ()),
                frozenset(str(g) for g in data.get("git") or ()),
            )
        )
    return sorted(runs, key=lambda run: (run.stack, run.arch, int(run.name.rpartition("/")[2].split("-")[0])))
