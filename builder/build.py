"""Build a plan: stages in dependency order, independent ones in parallel, each probed
before it is tagged with its key (an interrupted or failing stage never looks cached)."""

from __future__ import annotations

import concurrent.futures
import hashlib
import io
import json
import os
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import docker.errors
from rich.console import Console
from rich.live import Live
from rich.table import Table

from builder import base as base_mod
from builder import plan as plan_mod
from builder import probes, smoke, sources
from builder.engine import BuildFailed, Engine
from builder.errors import StackbuildError
from builder.failures import diagnose
from builder.fetch import Cache, HttpClient, Progress
from builder.lock import Lock, LockedPackage, find_installer, generate_package, host_arch
from builder.manifest import Manifest
from builder.plan import Plan, Stage
from builder.siteconfig import SiteConfig


class StageFailed(StackbuildError):
    def __init__(self, stage: str, reason: str, log_tail: list[str], log_file: Path, cause: str | None) -> None:
        lines = [f"stage {stage} failed: {reason}"]
        if log_tail:
            lines += ["last lines of its log:", *(f"  | {line}" for line in log_tail)]
        lines.append(f"full log: {log_file}")
        if cause:
            lines.append(f"likely cause: {cause}")
        super().__init__("\n".join(lines))
        self.stage, self.reason, self.cause = stage, reason, cause


@dataclass
class StageStatus:
    name: str
    state: str = "waiting"  # waiting | cached | building | probing | built | failed | skipped
    started: float = 0.0
    elapsed: float = 0.0
    note: str = ""


@dataclass
class BuildResult:
    plan: Plan
    statuses: dict[str, StageStatus]
    tags: dict[str, str] = field(default_factory=dict)
    image_ids: dict[str, str] = field(default_factory=dict)
    smoke: smoke.SmokeResult | None = None


class Reporter:
    """Progress: plain lines (not a TTY) or a live table (rich)."""

    def __init__(self, statuses: dict[str, StageStatus], live: bool) -> None:
        self.statuses = statuses
        self.lock = threading.Lock()
        self.live: Live | None = None
        if live:
            self.live = Live(self._table(), console=Console(stderr=True), refresh_per_second=4, transient=False)

    def _table(self) -> Table:

        table = Table(title="stackbuild", expand=False)
        for column in ("stage", "status", "elapsed", "cache", "note"):
            table.add_column(column)
        now = time.monotonic()
        for s in self.statuses.values():
            elapsed = s.elapsed or (now - s.started if s.started else 0.0)
            cache = "hit" if s.state == "cached" else ("miss" if s.state not in ("waiting", "skipped") else "")
            table.add_row(s.name, s.state, f"{elapsed:.1f}s" if elapsed else "", cache, s.note[:60])
        return table

    def __enter__(self) -> Reporter:
        if self.live:
            self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live:
            self.live.update(self._table())
            self.live.__exit__(None, None, None)

    def update(self, name: str, state: str, note: str = "") -> None:
        with self.lock:
            status = self.statuses[name]
            if state == "building":
                status.started = time.monotonic()
            if state in ("built", "failed") and status.started:
                status.elapsed = time.monotonic() - status.started
            status.state, status.note = state, note or status.note
            if self.live:
                self.live.update(self._table())
            else:
                took = f" ({status.elapsed:.1f}s)" if state in ("built", "failed") else ""
                print(f"[stackbuild] {name}: {state}{took}{' - ' + note if note else ''}", file=sys.stderr, flush=True)


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    tar.addfile(info, io.BytesIO(data))


class Builder:
    def __init__(
        self,
        manifest: Manifest,
        lock: Lock,
        manifest_dir: Path,
        site: SiteConfig,
        cache: Cache,
        log_dir: Path,
        jobs: int = 2,
        frozen: bool = False,
        say: Callable[[str], None] = lambda m: print(m, file=sys.stderr, flush=True),
    ) -> None:
        self.manifest, self.lock, self.manifest_dir = manifest, lock, manifest_dir
        self.site, self.cache, self.log_dir = site, cache, log_dir
        self.jobs, self.frozen, self.say = jobs, frozen, say
        self.client = HttpClient()
        self._local = threading.local()

    def engine(self) -> Engine:
        # docker-py clients are not shared between threads.
        if not hasattr(self._local, "engine"):
            self._local.engine = Engine()
        engine: Engine = self._local.engine
        return engine

    # -- inputs --------------------------------------------------------------------------

    def base_tarball(self, arch: str, flavor: str) -> Path:
        """The base tarball to build on, bootstrapped if not in the cache (checked against the lock)."""
        assert self.lock.base.kind == "bootstrap" and self.manifest.base.bootstrap is not None
        sha = self.base_shas(arch)[flavor]
        if self.cache.has(sha):
            return self.cache.blob(sha)
        locked = self.lock.base.tarballs[arch][flavor]
        spec = self.manifest.base.bootstrap
        self.say(f"[stackbuild] base-{flavor}: bootstrapping {spec.suite} with mmdebstrap (not in the cache)")
        made = base_mod.bootstrap(spec, arch, flavor, self.cache, mirror=self.site.rewrite(spec.mirror))
        if made.sha256 != locked.sha256:
            changed = sorted(
                p for p in set(made.packages) | set(locked.packages) if made.packages.get(p) != locked.packages.get(p)
            )
            message = (
                f"base-{flavor}: the bootstrap gives sha256 {made.sha256}, the lock pins {locked.sha256} "
                f"(the Debian mirror moved on: {len(changed)} package versions differ, e.g. "
                f"{', '.join(changed[:5])}); relock with `stackbuild lock {self.manifest.name}`"
            )
            if self.frozen:
                raise StackbuildError(message)
            self.say(f"[stackbuild] warning: {message}; building on the new base (--frozen refuses)")
        return self.cache.blob(made.sha256)

    def prepare_bases(self, arch: str) -> dict[str, str]:
        """Make sure the base tarballs are in the cache; their sha256 per flavor (for the plan)."""
        if self.lock.base.kind != "bootstrap":
            return {}
        if arch not in self.lock.base.tarballs:
            raise StackbuildError(
                f"the lock of {self.manifest.name} has no {arch} base: run `stackbuild lock {self.manifest.name} "
                f"--arch {arch}`"
            )
        for flavor in ("devel", "runtime"):
            self.base_tarball(arch, flavor)
        return self.base_shas(arch)

    def base_shas(self, arch: str) -> dict[str, str]:
        """sha256 of the base tarballs a build will use: the lock's, or a drifted one already bootstrapped."""
        if self.lock.base.kind != "bootstrap":
            return {}
        shas = {}
        for flavor, locked in self.lock.base.tarballs.get(arch, {}).items():
            shas[flavor] = locked.sha256
            if not self.cache.has(locked.sha256) and self.manifest.base.bootstrap is not None:
                key = base_mod.spec_key(self.manifest.base.bootstrap, arch, flavor, self.manifest.base.bootstrap.mirror)
                record = self.cache.root / "base" / f"{key}.json"
                if record.is_file():
                    shas[flavor] = json.loads(record.read_text())["sha256"]
        return shas

    def package_file(self, package: LockedPackage) -> Path:
        if self.cache.has(package.sha256):
            return self.cache.blob(package.sha256)
        spec = (getattr(self.manifest.toolkit.packages, package.kind) or {})[package.arch]
        if spec.generate is not None:
            sha = generate_package(spec, self.manifest_dir, self.cache)
        elif (local := find_installer(self.site, package.file, package.sha256)) is not None:
            sha = self.cache.add_file(local, package.sha256)
        else:
            assert package.url is not None
            self.say(f"[stackbuild] toolkit: downloading {package.file}")
            progress = Progress(f"[stackbuild] toolkit: {package.file}", self.say)
            sha = self.client.download(self.site.rewrite(package.url), self.cache, package.sha256, progress)
        if sha != package.sha256:
            raise StackbuildError(f"{package.file}: sha256 {sha}, the lock pins {package.sha256}: relock")
        return self.cache.blob(sha)

    def component_files(self, stage: Stage, tar: tarfile.TarFile) -> None:
        assert stage.component is not None
        source = self.lock.component(stage.component).source
        if source.kind == "path":
            assert source.path is not None
            root = self.manifest_dir / source.path
            for rel in sources.tree_files(root):
                tar.add(root / rel, arcname=f"src/{rel.as_posix()}", recursive=False)
            return
        assert source.url is not None and source.commit is not None
        mirror = self.cache.root / "git" / f"{hashlib.sha256(source.url.encode()).hexdigest()[:16]}.git"
        url = self.site.repo_url(source.url)
        if not mirror.is_dir():
            sources.git("clone", "--quiet", "--mirror", url, str(mirror), timeout=1800)
        else:
            sources.git("-C", str(mirror), "fetch", "--quiet", "--prune", timeout=1800)
        with tempfile.TemporaryDirectory() as tmp:
            archive = Path(tmp) / "src.tar"
            sources.git("-C", str(mirror), "archive", "--prefix=src/", "-o", str(archive), source.commit)
            with tarfile.open(archive) as src:
                for member in src.getmembers():
                    tar.addfile(member, src.extractfile(member) if member.isfile() else None)

    def write_context(self, plan: Plan, stage: Stage, out: IO[bytes]) -> None:
        with tarfile.open(fileobj=out, mode="w") as tar:
            _add_bytes(tar, "Dockerfile", stage.dockerfile.encode())
            if stage.kind == "base" and self.lock.base.kind == "bootstrap":
                assert stage.flavor is not None
                tar.add(self.base_tarball(plan.arch, stage.flavor), arcname="rootfs.tar")
            elif stage.kind == "toolkit":
                for package in self.lock.packages:
                    if package.arch == plan.arch:
                        tar.add(self.package_file(package), arcname=f"packages/{package.file}")
            elif stage.kind == "component":
                self.component_files(stage, tar)

    # -- stages --------------------------------------------------------------------------

    def stage_probes(self, stage: Stage, image: str) -> list[probes.ProbeResult]:
        if stage.kind == "toolkit":
            return probes.toolkit_probes(self.engine(), image)
        if stage.kind == "component":
            assert stage.component is not None
            comp = self.manifest.component(stage.component)
            return probes.component_probes(self.engine(), image, comp.id, comp.probes)
        return []

    def stages_to_build(self, plan: Plan, engine: Engine) -> tuple[set[str], dict[str, str]]:
        """(stages whose image is missing and needed, image ids of the present ones met).

        Walking down from the final images, a present image ends the walk: its key covers
        every stage under it."""
        to_build: set[str] = set()
        present: dict[str, str] = {}
        seen: set[str] = set()

        def visit(name: str) -> None:
            if name in seen:
                return
            seen.add(name)
            image_id = engine.image_id(plan.stages[name].tag())
            if image_id:
                present[name] = image_id
                return
            to_build.add(name)
            for parent in plan.stages[name].parents:
                visit(parent)

        for final in ("devel-image", "runtime-image"):
            visit(final)
        return to_build, present

    def build_stage(self, plan: Plan, stage: Stage, log_file: Path, report: Callable[[str, str], None]) -> str:
        engine = self.engine()
        log_file.parent.mkdir(parents=True, exist_ok=True)
        labels = {
            "org.stackbuild.stack": plan.stack,
            "org.stackbuild.stage": stage.name,
            "org.stackbuild.key": stage.key,
            "org.stackbuild.inputs": json.dumps(stage.inputs, sort_keys=True),
        }
        with log_file.open("w") as log, tempfile.TemporaryFile() as context:

            def write(line: str) -> None:
                log.write(line + "\n")
                log.flush()

            write(f"# stage {stage.name} key {stage.key}" + (f"\n# {stage.context_note}" if stage.context_note else ""))
            started = time.monotonic()
            self.write_context(plan, stage, context)
            context.seek(0)
            write(f"# context ready in {time.monotonic() - started:.2f}s")
            try:
                image_id = engine.build(context, write, labels, plan.platform)
            except BuildFailed as err:
                raise StageFailed(
                    stage.name, err.args[0], err.log_tail[-15:], log_file, diagnose(err.log_tail)
                ) from err
            write(f"# image built in {time.monotonic() - started:.2f}s")
            report("probing", "")
            try:
                results = self.stage_probes(stage, image_id)
            except docker.errors.DockerException as err:
                engine.remove(image_id)
                raise StageFailed(stage.name, f"cannot run its probes: {err}", [], log_file, None) from err
            write(f"# built and probed in {time.monotonic() - started:.2f}s")
            for result in results:
                write(f"# probe {result.name}: {'ok' if result.ok else 'FAILED'}: {result.message}")
            failed = [r for r in results if not r.ok]
            if failed:
                engine.remove(image_id)
                first = failed[0]
                reason = f"probe {first.name} failed: {first.message}"
                raise StageFailed(stage.name, reason, [], log_file, diagnose([first.message]))
            engine.tag(image_id, stage.tag())
        return image_id

    def run(self, plan: Plan, live: bool | None = None) -> BuildResult:
        statuses = {s.name: StageStatus(s.name) for s in plan.order()}
        result = BuildResult(plan, statuses)
        engine = self.engine()
        live = sys.stderr.isatty() if live is None else live
        log_dir = self.log_dir / plan.stack.lower() / plan.arch
        for line in plan.drift:
            self.say(f"[stackbuild] note: {line} (building the working tree; --frozen refuses)")
        if plan.drift and self.frozen:
            raise StackbuildError("path sources differ from the lock and --frozen is set: relock")
        to_build, present = self.stages_to_build(plan, engine)
        result.image_ids.update(present)
        done = {name for name in plan.stages if name not in to_build}
        failure: StageFailed | None = None
        with Reporter(statuses, live) as reporter, concurrent.futures.ThreadPoolExecutor(self.jobs) as pool:
            for stage in plan.order():
                if stage.name in done:
                    reporter.update(stage.name, "cached", stage.key[:12])
                    plan_mod.record_build(self.cache, plan, stage)
            running: dict[concurrent.futures.Future[str], Stage] = {}
            pending = [s for s in plan.order() if s.name in to_build]
            while pending or running:
                can_start = not failure and len(running) < self.jobs
                ready = [s for s in pending if all(p in done for p in s.parents)] if can_start else []
                if ready:
                    stage = ready[0]
                    pending.remove(stage)
                    reporter.update(stage.name, "building", plan_mod.why(self.cache, plan, stage))

                    def report(state: str, note: str, name: str = stage.name) -> None:
                        reporter.update(name, state, note)

                    future = pool.submit(self.build_stage, plan, stage, log_dir / f"{stage.name}.log", report)
                    running[future] = stage
                    continue
                if not running:
                    break
                finished, _ = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
                for future in finished:
                    stage = running.pop(future)
                    try:
                        result.image_ids[stage.name] = future.result()
                    except StageFailed as err:
                        reporter.update(stage.name, "failed", err.reason)
                        failure = failure or err
                        continue
                    except StackbuildError as err:  # preparing the context: a download, a bootstrap
                        reporter.update(stage.name, "failed", str(err))
                        log_file = log_dir / f"{stage.name}.log"
                        failure = failure or StageFailed(stage.name, str(err), [], log_file, None)
                        continue
                    plan_mod.record_build(self.cache, plan, stage)
                    reporter.update(stage.name, "built", stage.key[:12])
                    done.add(stage.name)
            for stage in pending:
                reporter.update(stage.name, "skipped")
        if failure:
            raise failure
        self.tag_finals(plan, result)
        return result

    def final_tags(self, plan: Plan) -> dict[str, str]:
        m = self.manifest
        name = (
            f"{m.toolkit.version.lower()}-{m.toolkit.chip}-{m.platform.os}{m.platform.os_version}-py{m.platform.python}"
        )
        suffix = "" if plan.arch == host_arch() else f"-{plan.arch}"
        return {
            "runtime-image": f"{plan.repository}:{name}{suffix}",
            "devel-image": f"{plan.repository}:{name}-devel{suffix}",
        }

    def tag_finals(self, plan: Plan, result: BuildResult) -> None:
        engine = self.engine()
        for stage, tag in self.final_tags(plan).items():
            engine.tag(result.image_ids[stage], tag)
            result.tags[stage] = tag

    def smoke(self, plan: Plan, result: BuildResult) -> smoke.SmokeResult:
        """Smoke the runtime image once per image key (a recorded pass is not run again)."""
        stage = plan.stages["runtime-image"]
        record = plan_mod.state_path(self.cache, plan, f"smoke-{stage.key}")
        if record.is_file():
            return smoke.SmokeResult(True, True, "launch: passed (recorded for this image key)", "")
        outcome = smoke.run_smoke(self.engine(), result.tags["runtime-image"], self.manifest.smoke)
        if outcome.passed:
            record.parent.mkdir(parents=True, exist_ok=True)
            record.write_text(outcome.output)
        result.smoke = outcome
        return outcome


def default_jobs() -> int:
    return max(1, min(4, os.cpu_count() or 1))
