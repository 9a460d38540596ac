"""What the rest of stackbuild may ask of a container engine."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal, NoReturn, Protocol

from builder.engine.overlay import LayerDirs
from builder.model.arch import Arch
from builder.model.errors import StackbuildError


class EngineError(StackbuildError):
    pass


class EngineUnavailable(EngineError):
    """The engine cannot be used from here as it is: it does not answer (not running, or not to this
    user), or lacks the builder asked for. The problem and the one line that fixes it, apart for
    `stackbuild doctor`; other commands print the problem and a hint."""

    def __init__(self, problem: str, remedy: str, hint: str = "") -> None:
        super().__init__(f"{problem}: {hint}" if hint else problem)
        self.problem = problem
        self.remedy = remedy


class LogTail:
    """A build's log lines: each passed on to log, the last ones kept for the failure message."""

    KEEP = 80  # BuildKit's closing lines come after a step's own: room for both

    def __init__(self, log: Callable[[str], None]) -> None:
        self.log = log
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.log(line)
        self.lines = [*self.lines[1 - self.KEEP :], line]


class BuildFailed(EngineError):
    def __init__(self, message: str, log_tail: list[str]) -> None:
        super().__init__(message)
        self.log_tail = log_tail


@dataclass(frozen=True)
class BuildSpec:
    """How to build one context: the image's labels, the platform, network access, and build arguments."""

    labels: Mapping[str, str]
    arch: Arch
    network: bool = False  # builds are hermetic unless a stage declares network
    args: Mapping[str, str] = field(default_factory=dict)
    no_cache: bool = False  # every step run again, none taken from the builder's cache


@dataclass(frozen=True)
class RunResult:
    exit_code: int
    output: str


@dataclass(frozen=True)
class DeviceAccess:
    """Host devices and read-only host paths a container gets (the NPU and its driver), or the container
    runtime that gives them itself and the environment that tells it which (the Ascend Docker Runtime's
    ASCEND_VISIBLE_DEVICES)."""

    devices: tuple[str, ...] = ()
    read_only_mounts: tuple[str, ...] = ()
    runtime: str = ""  # "": the engine's default
    environment: tuple[tuple[str, str], ...] = ()
    groups: tuple[int, ...] = ()  # supplementary groups (the host's NPU group: a non-root image opens them)


NO_DEVICES = DeviceAccess()


@dataclass(frozen=True)
class ImageFacts:
    """What the engine says of one image it has."""

    id: str
    labels: Mapping[str, str]
    size: int  # bytes
    layers: tuple[str, ...]  # diff ids (sha256 of each uncompressed layer tar), bottom first
    tagged_at: float | None  # when this engine last tagged the ref (seconds since the epoch; None: never, e.g. pulled)


@dataclass(frozen=True)
class EngineFacts:
    """What the engine says of itself (for `stackbuild doctor`, and which stages a build sends it)."""

    product: str  # e.g. Docker
    version: str
    api_version: str
    storage_driver: str
    builder: str  # what stage builds go through
    root: Path | None  # where it keeps its images, as it names the place (None: it does not say)
    runtimes: tuple[str, ...] = ()  # the container runtimes it has registered (runc; ascend, MindCluster's)
    arch: Arch | None = None  # the machine it runs on, as it says (None: one stackbuild builds none of)


class Engine(Protocol):
    """What every command may ask of a container engine."""

    def image_id(self, ref: str) -> str | None:
        """The image ref names, if the engine has it."""
        ...

    def inspect(self, ref: str) -> ImageFacts:
        """What the engine says of the image ref names (EngineError when it has none)."""
        ...

    def tag(self, image_id: str, ref: str) -> None: ...

    def remove(self, ref: str) -> None: ...

    def tags(self, repository: str) -> set[str]:
        """Every tag of the repositories matching a glob (e.g. stackbuild/stage/*)."""
        ...

    def pull(self, ref: str, arch: Arch) -> str | None:
        """The image id of ref pulled from its registry; None when the registry does not have it."""
        ...

    def push(self, image_id: str, ref: str) -> str:
        """Push the image as ref (REGISTRY/REPO:TAG); the manifest digest it got. The name ref is only
        for the transfer: it is gone locally afterwards, whatever happened."""
        ...

    def build(
        self,
        context: Path,
        log: Callable[[str], None],
        spec: BuildSpec,
    ) -> str:
        """Build from a context directory holding a Dockerfile as spec says; the image id (untagged)."""
        ...

    def files(self, image: str, paths: Sequence[str], arch: Arch) -> dict[str, bytes]:
        """The regular files under paths in image's arch variant (pulled first if absent), by absolute path;
        missing paths skipped."""
        ...

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
        """Run a command in a throwaway container (no network), through the image's entrypoint unless
        another is given; its exit code and combined output."""
        ...

    def about(self) -> EngineFacts:
        """What the engine is, how it stores images and builds stages (EngineUnavailable when it
        cannot be used)."""
        ...


Attach = Literal["none", "stdin", "terminal"]


class Launcher(Protocol):
    """How a person starts an image on the engine with its own client: `stackbuild run` and `shell`,
    and the lines stackbuild prints to type. Nothing here needs the engine to answer."""

    def launch_line(
        self,
        image: str,
        command: Sequence[str],
        *,
        access: DeviceAccess = NO_DEVICES,
        network: bool = True,
        attach: Attach = "none",
    ) -> list[str]:
        """The command line that runs command (none: the image's own) in a container of image removed
        when it ends, given access, with no network unless network; attach: what of this process the
        container gets: nothing, its standard input (commands piped in reach the command), or its terminal."""
        ...

    def launch(self, line: Sequence[str]) -> NoReturn:
        """This process replaced by a line launch_line gave: the container's exit code is its own."""
        ...


class LayerStore(Protocol):
    """An engine's image store read and written directly: what normalising an image needs."""

    def save(self, image_id: str) -> AbstractContextManager[IO[bytes]]:
        """The image as `docker save` writes it, as a stream."""
        ...

    def layer_dirs(self, image_id: str) -> LayerDirs | None:
        """The image's config and its layers' directories, where this process can read them from the
        engine's data root (a local overlay2 engine); None where only `save` can give them."""
        ...

    def load(self, archive: Iterable[bytes]) -> None:
        """Load an archive in `docker save`'s format, sent as it comes (layers the engine has may be
        left out of it)."""
        ...

    def held(self, diff_ids: list[str]) -> int:
        """How many of the bottom layers of an image with these diff ids the engine holds already
        (a load may leave them out); 0 where it cannot tell."""
        ...

    def disk_usage(self) -> int:
        """Bytes the engine's image layers take (what removing images can free)."""
        ...

    def configure(self, image: str, changes: Sequence[str]) -> str:
        """image with Dockerfile instructions that only set its config (ENV, ENTRYPOINT, CMD) applied by
        the engine, by the Dockerfile's rules, and no layer added; the new image's id (untagged). Its
        store's config written, as a load writes it: a built stage's environment."""
        ...


@dataclass(frozen=True)
class CacheMount:
    """One of the builder's cache mounts (`RUN --mount=type=cache`), as the engine lists it."""

    id: str
    description: str  # BuildKit's: "cached mount <target> from exec <the step's command>"
    size: int  # bytes


class BuildCaches(Protocol):
    """The cache mounts an engine's builder keeps between builds (the compile cache's)."""

    def mounts(self) -> bool:
        """Whether builds take `RUN --mount` (BuildKit; the classic builder has no build-time mounts)."""
        ...

    def cache_mounts(self) -> list[CacheMount]:
        """Every cache mount the builder keeps."""
        ...

    def remove_cache_mount(self, mount_id: str) -> int:
        """Remove one (gone already: nothing); the bytes freed."""
        ...


class BuildEngine(Engine, LayerStore, BuildCaches, Protocol):
    """The engine stages are built on: it also stores what normalising rewrites."""
