"""The Engine on a Docker daemon, through docker-py; stage builds with BuildKit through the docker CLI
when one has it (docker-py has only the classic builder), else the classic builder.

STACKBUILD_BUILDER=classic|buildkit chooses (default: BuildKit when available)."""

from __future__ import annotations

import contextlib
import datetime
import functools
import io
import os
import re
import tarfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import docker
import docker.errors
import docker.models.containers
import requests

from builder.engine import buildkit
from builder.engine.overlay import LayerDirs, held_layers, image_layer_dirs
from builder.engine.protocol import (
    NO_DEVICES,
    BuildFailed,
    BuildSpec,
    DeviceAccess,
    EngineError,
    ImageFacts,
    LogTail,
    RunResult,
    registry_credentials,
)
from builder.model.arch import Arch
from builder.model.registry import registry_of
from builder.model.retry import RetryPolicy

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def _buildkit_cli(builder: str) -> str | None:
    if builder == "classic":
        return None
    cli = buildkit.find_cli()
    if cli is None and builder == "buildkit":
        raise EngineError(
            "STACKBUILD_BUILDER=buildkit, but no docker CLI here runs BuildKit: install docker.io "
            "(its 20.10 client has it built in) or the buildx plugin"
        )
    return cli


class _Missing(Exception):
    """The registry has no such image."""


TRANSIENT = ("connection refused", "connection reset", "timeout", "eof", "502", "503", "504", "500 ", "toomanyrequests")
MISSING = ("manifest unknown", "not found", "no such image")
DENIED = ("unauthorized", "authentication required", "denied", "forbidden")


class _Transient(EngineError):
    """A connection error or a 5xx: worth another try."""


def _classified(action: Callable[[], None], ref: str) -> None:
    registry = ref.split("/", 1)[0]
    try:
        action()
    except (docker.errors.DockerException, requests.RequestException) as err:
        text = str(err).lower()
        if any(word in text for word in DENIED):  # said without what was sent
            message = f"registry {registry} refused the credentials for {ref}: `docker login {registry}`"
            raise EngineError(message) from None
        if any(word in text for word in MISSING):
            raise _Missing(str(err)) from err
        kind = _Transient if any(word in text for word in TRANSIENT) else EngineError
        raise kind(f"registry transfer of {ref} failed: {err}") from err


def _with_retries(action: Callable[[], None], ref: str, retry: RetryPolicy) -> None:
    """A registry transfer: connection errors and 5xx retried as the policy says; a missing image
    raises _Missing; refused credentials are one line naming the registry."""
    retry.retrying(lambda err: isinstance(err, _Transient))(_classified, action, ref)


def reachable(timeout: int = 5) -> bool:
    """Whether a Docker engine answers (DOCKER_HOST or the default socket)."""
    try:
        docker.from_env(timeout=timeout).ping()
        return True
    except (docker.errors.DockerException, requests.RequestException):
        return False


BUILDERS = ("auto", "buildkit", "classic")
# The history line of an image configure made (the command of the container committed, never run).
CONFIGURED_BY = "stackbuild: config set by instructions (ENV, ENTRYPOINT, CMD), no layer"


class DockerEngine:
    def __init__(self, host: str | None = None, builder: str | None = None, retry: RetryPolicy | None = None) -> None:
        """host: a daemon address (unix:///..., tcp://...); default DOCKER_HOST or the local socket.
        builder: auto (BuildKit when a docker CLI has it), buildkit or classic; default $STACKBUILD_BUILDER.
        retry: how registry transfers are tried again."""
        self.host = host
        self.retry = retry or RetryPolicy()
        self._local = threading.local()
        self.client  # noqa: B018 - fail now, with the fix, if no engine answers
        self.builder = builder or os.environ.get("STACKBUILD_BUILDER") or "auto"
        if self.builder not in BUILDERS:
            raise EngineError(f"STACKBUILD_BUILDER={self.builder!r}: say one of {', '.join(BUILDERS)}")
        if self.builder == "buildkit":
            self.buildkit_cli  # noqa: B018 - asked for by name: no such CLI is an error now, not mid-build

    @functools.cached_property
    def buildkit_cli(self) -> str | None:
        """The docker CLI stage builds go through (None: the classic builder), found when first needed."""
        return _buildkit_cli(self.builder)

    @property
    def client(self) -> docker.DockerClient:
        # docker-py clients are not shared between threads: one per thread.
        if not hasattr(self._local, "client"):
            try:
                # As DOCKER_HOST would be: TLS from DOCKER_TLS_VERIFY/DOCKER_CERT_PATH, ssh:// through ssh.
                environment = dict(os.environ, DOCKER_HOST=self.host) if self.host else None
                ssh = bool(self.host and self.host.startswith("ssh://"))
                client = docker.from_env(timeout=600, environment=environment, use_ssh_client=ssh)
                client.ping()
            except (docker.errors.DockerException, requests.RequestException) as err:
                raise EngineError(
                    f"cannot reach the Docker engine ({err}): run `python -m builder.hostsetup --docker` "
                    "or start dockerd"
                ) from err
            self._local.client = client
        result: docker.DockerClient = self._local.client
        return result

    def _inspect(self, ref: str) -> dict[str, Any]:
        try:
            data: dict[str, Any] = self.client.api.inspect_image(ref)
            return data
        except (docker.errors.DockerException, requests.RequestException) as err:  # an engine gone mid-build too
            raise EngineError(f"cannot inspect {ref}: {err}") from err

    def image_id(self, ref: str) -> str | None:
        try:
            image_id: str = self.client.api.inspect_image(ref)["Id"]
            return image_id
        except docker.errors.ImageNotFound:
            return None
        except (docker.errors.DockerException, requests.RequestException) as err:
            raise EngineError(f"cannot inspect {ref}: {err}") from err

    def inspect(self, ref: str) -> ImageFacts:
        data = self._inspect(ref)
        return ImageFacts(
            id=str(data["Id"]),
            labels=dict((data.get("Config") or {}).get("Labels") or {}),
            size=int(data["Size"]),
            layers=tuple((data.get("RootFS") or {}).get("Layers") or ()),
            tagged_at=_tagged_at(str((data.get("Metadata") or {}).get("LastTagTime") or "")),
        )

    def tag(self, image_id: str, ref: str) -> None:
        repository, _, tag = ref.rpartition(":")
        try:
            self.client.api.tag(image_id, repository, tag)
        except (docker.errors.DockerException, requests.RequestException) as err:
            raise EngineError(f"cannot tag {image_id} as {ref}: {err}") from err

    def remove(self, ref: str) -> None:
        try:
            self.client.api.remove_image(ref, force=True, noprune=False)
        except docker.errors.NotFound:
            pass
        except (docker.errors.DockerException, requests.RequestException) as err:
            raise EngineError(f"cannot remove {ref}: {err}") from err

    def about(self) -> dict[str, str]:
        """The engine's version, API version, storage driver and data root (for `stackbuild doctor`)."""
        try:
            version, info = self.client.version(), self.client.info()
        except (docker.errors.DockerException, requests.RequestException) as err:
            raise EngineError(f"cannot ask the engine about itself: {err}") from err
        return {
            "version": str(version.get("Version", "?")),
            "api_version": str(version.get("ApiVersion", "?")),
            "storage_driver": str(info.get("Driver", "?")),
            "root": str(info.get("DockerRootDir", "")),
            "builder": f"BuildKit through {self.buildkit_cli}" if self.buildkit_cli else "classic (docker-py)",
        }

    @functools.cached_property
    def _overlay_root(self) -> Path | None:
        """The data root of an overlay2 engine on this machine, where this process can read it (its
        layers can be reassembled from their directories and tar-split records); None otherwise."""
        host = self.host or os.environ.get("DOCKER_HOST") or "unix://"
        if not host.startswith("unix://"):
            return None
        try:
            info = self.client.info()
        except (docker.errors.DockerException, requests.RequestException):
            return None  # then the layers come through `docker save`, which reports the error
        if info.get("Driver") != "overlay2":
            return None
        root = Path(str(info.get("DockerRootDir", "")))
        return root if root.is_absolute() and os.access(root, os.R_OK | os.X_OK) else None

    def layer_dirs(self, image_id: str) -> LayerDirs | None:
        root = self._overlay_root
        return image_layer_dirs(root, image_id) if root is not None else None

    def held(self, diff_ids: list[str]) -> int:
        root = self._overlay_root
        return held_layers(root, diff_ids) if root is not None else 0

    @contextlib.contextmanager
    def save(self, image_id: str) -> Iterator[IO[bytes]]:
        try:
            chunks = self.client.api.get_image(image_id, chunk_size=1 << 20)
            with io.BufferedReader(_ChunkReader(iter(chunks)), 1 << 20) as stream:
                yield stream
        except (docker.errors.DockerException, requests.RequestException) as err:
            raise EngineError(f"cannot read {image_id} out of the engine: {err}") from err

    def load(self, archive: Iterable[bytes]) -> None:
        try:
            answer = self.client.api.load_image(iter(archive))  # an iterator: sent chunked, as it comes
            for event in answer if answer is not None else ():
                if isinstance(event, dict) and "error" in event:
                    raise EngineError(f"the engine refused an image: {event['error']}")
        except (docker.errors.DockerException, requests.RequestException) as err:
            raise EngineError(f"cannot load an image into the engine: {err}") from err

    def disk_usage(self) -> int:
        try:
            usage: int = self.client.df().get("LayersSize") or 0
        except (docker.errors.DockerException, requests.RequestException) as err:
            raise EngineError(f"cannot ask the engine for its disk usage: {err}") from err
        return usage

    def tags(self, repository: str) -> set[str]:
        try:  # the summaries: one request, where images.list() inspects each image too
            summaries: list[dict[str, Any]] = self.client.api.images(name=repository)
        except (docker.errors.DockerException, requests.RequestException) as err:
            raise EngineError(f"cannot list the images of {repository}: {err}") from err
        return {tag for s in summaries for tag in s.get("RepoTags") or () if tag != "<none>:<none>"}

    def pull(self, ref: str, arch: Arch) -> str | None:
        # NAME@sha256:<hex> is pulled by digest: the API takes the digest where a tag would go.
        repository, _, tag = ref.partition("@") if "@" in ref else ref.rpartition(":")

        def once() -> None:
            pulling = self.client.api.pull(
                repository,
                tag=tag,
                platform=arch.platform,
                stream=True,
                decode=True,
                auth_config=registry_credentials(registry_of(ref)),
            )
            for event in pulling:
                if "error" in event:
                    raise docker.errors.APIError(str(event["error"]))

        try:
            _with_retries(once, ref, self.retry)
        except _Missing:
            return None
        return self.image_id(ref)

    def push(self, image_id: str, ref: str) -> str:
        repository, _, tag = ref.rpartition(":")
        pushed: list[str] = []

        def once() -> None:
            pushing = self.client.api.push(
                repository, tag=tag, stream=True, decode=True, auth_config=registry_credentials(registry_of(ref))
            )
            for event in pushing:
                if "error" in event:
                    raise docker.errors.APIError(str(event["error"]))
                if digest := (event.get("aux") or {}).get("Digest"):
                    pushed.append(str(digest))

        self.tag(image_id, ref)
        try:
            _with_retries(once, ref, self.retry)
        except _Missing as err:
            raise EngineError(f"cannot push {ref}: {err}") from err
        finally:
            self.remove(ref)
        if not pushed:
            raise EngineError(f"cannot push {ref}: the registry reported no digest")
        return pushed[-1]

    def build(
        self,
        context: Path,
        log: Callable[[str], None],
        spec: BuildSpec,
    ) -> str:
        if self.buildkit_cli:
            return buildkit.build(self.buildkit_cli, self.host, context, log, spec)
        return self._classic_build(context, log, spec)

    def _classic_build(self, context: Path, log: Callable[[str], None], spec: BuildSpec) -> str:
        tail = LogTail(log)
        try:
            stream: Iterable[dict[str, Any]] = self.client.api.build(
                path=str(context),  # docker-py tars the directory as it sends it
                rm=True,
                forcerm=True,
                labels=dict(spec.labels),
                buildargs=dict(spec.args),
                decode=True,
                platform=spec.arch.platform,
                pull=False,
                nocache=spec.no_cache,
                # Builds are hermetic: everything a stage needs travels in its context (unless it declares network).
                network_mode="default" if spec.network else "none",
            )
            image_id = _follow(stream, tail)
        except (docker.errors.DockerException, requests.RequestException) as err:
            raise BuildFailed(str(err), tail.lines) from err
        except BuildFailed as err:
            raise BuildFailed(str(err), tail.lines) from err
        if image_id is None:
            raise BuildFailed("the engine reported no image id", tail.lines)
        return image_id

    @contextlib.contextmanager
    def container(
        self,
        image: str,
        command: list[str],
        workdir: str | None,
        access: DeviceAccess,
        platform: str | None = None,
        entrypoint: Sequence[str] | None = None,
    ) -> Iterator[docker.models.containers.Container]:
        """A created container, removed however the block ends."""
        try:
            container = self.client.containers.create(
                image,
                command,
                entrypoint=list(entrypoint) if entrypoint is not None else None,
                platform=platform,
                working_dir=workdir,
                network_disabled=True,
                devices=[f"{d}:{d}" for d in access.devices],
                mounts=[docker.types.Mount(p, p, type="bind", read_only=True) for p in access.read_only_mounts],
                detach=True,
            )
        except (docker.errors.DockerException, requests.RequestException) as err:
            raise EngineError(f"cannot create a container of {image}: {err}") from err
        try:
            yield container
        finally:
            with contextlib.suppress(docker.errors.DockerException, requests.RequestException):
                container.remove(force=True)

    def files(self, image: str, paths: Sequence[str], arch: Arch) -> dict[str, bytes]:
        platform = None  # an image that is here is read whatever its architecture
        if self.image_id(image) is None:
            platform = arch.platform
            try:
                self.client.images.pull(image, platform=platform)
            except docker.errors.DockerException as err:
                raise EngineError(f"cannot pull {image} ({err}): pull or `docker load` it first") from err
        found: dict[str, bytes] = {}
        with self.container(image, ["true"], None, NO_DEVICES, platform) as container:
            for path in paths:
                try:
                    stream, _ = container.get_archive(path)
                except docker.errors.NotFound:
                    continue
                except docker.errors.DockerException as err:
                    raise EngineError(f"cannot read {path} from {image}: {err}") from err
                parent = path.rstrip("/").rsplit("/", 1)[0]
                with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
                    for member in tar:
                        handle = tar.extractfile(member) if member.isfile() else None
                        if handle is not None:
                            found[f"{parent}/{member.name}"] = handle.read()
        return found

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
        with self.container(image, command, workdir, access, entrypoint=entrypoint) as container:
            try:
                container.start()
                status = container.wait(timeout=timeout)
                output = container.logs(stdout=True, stderr=True).decode(errors="replace")
            except requests.RequestException as err:
                raise EngineError(f"a container of {image} did not finish within {timeout:.0f}s") from err
            except docker.errors.DockerException as err:
                raise EngineError(f"running a container of {image} failed: {err}") from err
            return RunResult(int(status.get("StatusCode", 1)), output)

    def configure(self, image: str, changes: Sequence[str]) -> str:
        # A container committed unchanged: its empty layer is not added (the image's layers stay its
        # parent's), and the daemon applies the instructions with the Dockerfile's own rules. The
        # image's config is given whole, so nothing of the container (its hostname) enters it.
        try:
            config = self.client.api.inspect_image(image)["Config"]
        except (docker.errors.DockerException, requests.RequestException) as err:
            raise EngineError(f"cannot read the config of {image}: {err}") from err
        with self.container(image, [CONFIGURED_BY], None, NO_DEVICES) as container:
            try:
                committed = str(self.client.api.commit(str(container.id), conf=config, changes=list(changes))["Id"])
            except (docker.errors.DockerException, requests.RequestException) as err:
                raise EngineError(f"cannot set the config of {image}: {err}") from err
        # The container was never started, but creating it can write (a WORKDIR made, a VOLUME set up).
        if self.inspect(committed).layers != self.inspect(image).layers:
            self.remove(committed)
            raise EngineError(f"setting the config of {image} added a layer: the image would not be the one built")
        return committed


class _ChunkReader(io.RawIOBase):
    """An iterator of byte chunks (an HTTP stream) as a readable file."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks = chunks
        self.rest = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self.rest:
            try:
                self.rest = next(self.chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self.rest))
        buffer[:size] = self.rest[:size]
        self.rest = self.rest[size:]
        return size


def _follow(stream: Iterable[dict[str, Any]], log: Callable[[str], None]) -> str | None:
    """Read a build's progress stream; the image id, or BuildFailed at the first error."""
    image_id = None
    for chunk in stream:
        if "stream" in chunk:
            for line in ANSI_ESCAPE.sub("", chunk["stream"]).splitlines():
                log(line)
        if "aux" in chunk and "ID" in chunk["aux"]:
            image_id = chunk["aux"]["ID"]
        if "error" in chunk:
            for line in chunk["error"].splitlines():
                log(line)
            raise BuildFailed(chunk["error"].strip().splitlines()[-1], [])
    return image_id


def _tagged_at(stamp: str) -> float | None:
    """Docker's LastTagTime: RFC 3339 with nanoseconds; "0001-01-01T00:00:00Z" when the engine never tagged it."""
    found = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)", stamp)
    if found is None or stamp.startswith("0001-"):
        return None
    zone = "+00:00" if found.group(3) == "Z" else found.group(3)
    when = datetime.datetime.fromisoformat(found.group(1) + zone).timestamp()
    return when + float(f"0{found.group(2) or ''}")
