"""An in-memory engine (the Protocols of builder.engine: Engine, LayerStore, Launcher) for the fast
tests: no Docker."""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import io
import json
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, NoReturn

from builder.engine import (
    NO_DEVICES,
    Attach,
    BuildFailed,
    BuildSpec,
    CacheMount,
    DeviceAccess,
    EngineFacts,
    EngineUnavailable,
    ImageFacts,
    RunResult,
)
from builder.engine.overlay import LayerDirs
from builder.execute.normalise import normalise
from builder.model.arch import Arch


@dataclass
class FakeEngine:
    """Images are ids in dicts; builds record their Dockerfile; runs answer the probe runner with `probe_ok`."""

    present: set[str] = field(default_factory=set)
    build_seconds: float = 0.0
    probe_ok: bool = True
    fail_build: str | None = None  # a Dockerfile line whose build fails
    smoke_output: str = "Kernel launch success!"
    tagged: dict[str, str] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)
    dockerfiles: list[str] = field(default_factory=list)
    build_args: list[dict[str, str]] = field(default_factory=list)
    probe_seconds: dict[str, float] = field(default_factory=dict)  # image id -> how long its probes take
    failing_probes: set[str] = field(default_factory=set)  # image ids whose probes fail
    events: list[str] = field(default_factory=list)  # "build <stage>", "probed <image id>", in order
    parents_must_exist: bool = False  # a build naming a parent image this engine lacks fails, as BuildKit's
    runs: list[tuple[str, list[str], DeviceAccess]] = field(default_factory=list)
    script_env: dict[str, str] = field(default_factory=lambda: {"ASCEND_HOME_PATH": "/usr/local/Ascend/cann"})
    active: int = 0
    max_active: int = 0
    guard: threading.Lock = field(default_factory=threading.Lock)

    def image_id(self, ref: str) -> str | None:
        if ref in self.present or "@sha256:" in ref:  # an image pinned by digest (an image base): pulled
            return f"sha256:present-{ref}"
        return self.tagged.get(ref)

    image_labels: dict[str, dict[str, str]] = field(default_factory=dict)  # image -> its labels
    tag_times: dict[str, float] = field(default_factory=dict)  # ref -> when it was tagged (unset: never)
    image_layers: dict[str, tuple[str, ...]] = field(default_factory=dict)  # ref -> its diff ids (unset: none)

    def inspect(self, ref: str) -> ImageFacts:
        """Facts of any ref (a test gives the labels, tag times and layers it needs)."""
        found = self.image_id(ref) or f"sha256:facts-{ref}"
        return ImageFacts(
            found, self.image_labels.get(ref, {}), 1, self.image_layers.get(ref, ()), self.tag_times.get(ref)
        )

    def tag(self, image_id: str, ref: str) -> None:
        self.tagged[ref] = image_id

    def remove(self, ref: str) -> None:
        self.removed.append(ref)

    image_files: dict[str, dict[str, bytes]] = field(default_factory=dict)  # image -> its files by path

    def files(self, image: str, paths: Sequence[str], arch: Arch) -> dict[str, bytes]:
        return {
            path: data
            for path, data in self.image_files.get(image, {}).items()
            if any(path == p or path.startswith(p.rstrip("/") + "/") for p in paths)
        }

    def tags(self, repository: str) -> set[str]:
        return {tag for tag in self.tagged if fnmatch.fnmatch(tag.rpartition(":")[0], repository)}

    @contextlib.contextmanager
    def save(self, image_id: str) -> Iterator[IO[bytes]]:
        """A `docker save` archive of an image without layers, its config naming it (in a label: normalised
        images stay apart)."""
        config = {"rootfs": {"type": "layers", "diff_ids": []}, "config": {"Labels": {"fake.image": image_id}}}
        manifest = json.dumps([{"Config": "c.json", "RepoTags": None, "Layers": []}]).encode()
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w") as tar:
            for name, data in (("c.json", json.dumps(config).encode()), ("manifest.json", manifest)):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        out.seek(0)
        yield out

    def normalised(self, built: str, epoch: int) -> str:
        """The id a StageRunner hands on for this engine's image `built`: it normalised."""
        with self.save(built) as saved, tempfile.TemporaryDirectory() as scratch:
            return normalise(saved, frozenset(), epoch, Path(scratch)).image_id

    def layer_dirs(self, image_id: str) -> LayerDirs | None:
        return None  # no data root: images go through save

    loaded: list[bytes] = field(default_factory=list)

    def load(self, archive: Iterable[bytes]) -> None:
        self.loaded.append(b"".join(archive))

    def held(self, diff_ids: list[str]) -> int:
        return 0  # no data root: every layer is sent

    def disk_usage(self) -> int:
        return 1000 * len(set(self.tagged.values()))

    # The builder's cache mounts (a BuildKit engine's, unless classic): id -> (description, size).
    build_mounts: dict[str, tuple[str, int]] = field(default_factory=dict)
    classic: bool = False

    def mounts(self) -> bool:
        return not self.classic

    def cache_mounts(self) -> list[CacheMount]:
        return [CacheMount(i, description, size) for i, (description, size) in self.build_mounts.items()]

    def remove_cache_mount(self, mount_id: str) -> int:
        return self.build_mounts.pop(mount_id, ("", 0))[1]

    registry: dict[str, str] = field(default_factory=dict)  # ref -> image id, a registry's content
    pulled: list[str] = field(default_factory=list)
    pushed: list[str] = field(default_factory=list)

    def pull(self, ref: str, arch: Arch) -> str | None:
        self.pulled.append(ref)
        if ref not in self.registry:
            return None
        self.tagged[ref] = self.registry[ref]
        return self.registry[ref]

    def push(self, image_id: str, ref: str) -> str:
        self.pushed.append(ref)
        self.registry[ref] = image_id
        return "sha256:" + "d" * 64

    def build(
        self,
        context: Path,
        log: Callable[[str], None],
        spec: BuildSpec,
    ) -> str:
        self.build_args.append(dict(spec.args))
        if self.parents_must_exist and (absent := [r for r in spec.args.values() if self.image_id(r) is None]):
            raise BuildFailed(f"failed to solve: pull access denied for {absent[0]}", [])
        # A stage's build, or another image's (the compile cache's tool), named by its labels.
        made = spec.labels.get("org.stackbuild.stage") or next(iter(spec.labels.values()), "")
        self.events.append(f"build {made}")
        dockerfile = (context / "Dockerfile").read_text()
        with self.guard:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            self.dockerfiles.append(dockerfile)
        time.sleep(self.build_seconds)
        with self.guard:
            self.active -= 1
        if self.fail_build and self.fail_build in dockerfile:
            log("make: *** [all] Error 2")
            raise BuildFailed("The command '/bin/sh -c make' returned a non-zero code: 2", ["make: *** [all] Error 2"])
        return f"sha256:{spec.labels.get('org.stackbuild.key') or hashlib.sha256(dockerfile.encode()).hexdigest()}"

    configured: list[tuple[str, list[str]]] = field(default_factory=list)

    def configure(self, image: str, changes: Sequence[str]) -> str:
        self.configured.append((image, list(changes)))
        return image

    def run(
        self,
        image: str,
        command: list[str],
        *,
        workdir: str | None = None,
        access: DeviceAccess = NO_DEVICES,
        timeout: float = 900,
        entrypoint: Sequence[str] | None = None,
    ) -> RunResult:
        self.runs.append((image, command, access))
        if command[:2] == ["python3", "-c"]:  # the probe runner: one answer per probe
            probes = json.loads(command[3])
            time.sleep(self.probe_seconds.get(image, 0.0))
            ok = self.probe_ok and image not in self.failing_probes
            answer = [{"ok": ok, "message": "fake"} for _ in probes]
            self.events.append(f"probed {image}")
            return RunResult(0, json.dumps(answer))
        if command[-1].startswith("# stackbuild: prints the environment"):  # the environment scripts read
            return RunResult(0, f"stackbuild-env-before {{}}\nstackbuild-env-after {json.dumps(self.script_env)}")
        return RunResult(0, self.smoke_output)

    runtimes: tuple[str, ...] = ("runc",)  # the daemon's container runtimes, as its info lists them
    arch: Arch | None = field(default_factory=Arch.host)  # the machine it says it runs on
    unanswered: bool = False  # about() fails, as a daemon that does not answer

    def about(self) -> EngineFacts:
        if self.unanswered:
            raise EngineUnavailable("cannot ask the engine about itself: fake", "start it")
        return EngineFacts("Fake", "1.0", "0.1", "memory", "the fake's builds", None, self.runtimes, self.arch)

    launched: list[list[str]] = field(default_factory=list)

    def launch_line(
        self,
        image: str,
        command: Sequence[str],
        *,
        access: DeviceAccess = NO_DEVICES,
        network: bool = True,
        attach: Attach = "none",
    ) -> list[str]:
        flags = [*(f"--device={d}" for d in access.devices), *(f"--ro={p}" for p in access.read_only_mounts)]
        return [
            "fake-run",
            *flags,
            *([] if network else ["--offline"]),
            *({"none": [], "stdin": ["-i"], "terminal": ["-t"]}[attach]),
            image,
            *command,
        ]

    def launch(self, line: Sequence[str]) -> NoReturn:
        """The process would become the line: it ends here, as if its container exited 0."""
        self.launched.append(list(line))
        raise SystemExit(0)
