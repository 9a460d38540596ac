"""Throwaway containers on a Docker daemon, every one through one context manager, so it is removed
however the block ends (an error, a timeout, Ctrl-C): a command run in one (no network), and the
files of an image read out of one never started."""

from __future__ import annotations

import contextlib
import io
import tarfile
from collections.abc import Iterator, Sequence

import docker
import docker.errors
import docker.models.containers
import docker.types
import requests

from builder.engine.docker_images import image_id
from builder.engine.protocol import NO_DEVICES, DeviceAccess, EngineError, RunResult
from builder.model.arch import Arch


@contextlib.contextmanager
def container(
    client: docker.DockerClient,
    image: str,
    command: list[str],
    workdir: str | None,
    access: DeviceAccess,
    platform: str | None = None,
    entrypoint: Sequence[str] | None = None,
) -> Iterator[docker.models.containers.Container]:
    """A created container, removed however the block ends."""
    try:
        made = client.containers.create(
            image,
            command,
            entrypoint=list(entrypoint) if entrypoint is not None else None,
            platform=platform,
            working_dir=workdir,
            network_disabled=True,
            devices=[f"{d}:{d}" for d in access.devices],
            mounts=[docker.types.Mount(p, p, type="bind", read_only=True) for p in access.read_only_mounts],
            group_add=[str(g) for g in access.groups] or None,
            detach=True,
        )
    except (docker.errors.DockerException, requests.RequestException) as err:
        raise EngineError(f"cannot create a container of {image}: {err}") from err
    try:
        yield made
    finally:
        with contextlib.suppress(docker.errors.DockerException, requests.RequestException):
            made.remove(force=True)


def image_files(client: docker.DockerClient, image: str, paths: Sequence[str], arch: Arch) -> dict[str, bytes]:
    """The regular files under paths in image's arch variant (pulled first if absent), by absolute path;
    missing paths skipped."""
    platform = None  # an image that is here is read whatever its architecture
    if image_id(client, image) is None:
        platform = arch.platform
        try:
            client.images.pull(image, platform=platform)
        except docker.errors.DockerException as err:
            raise EngineError(f"cannot pull {image} ({err}): pull or `docker load` it first") from err
    found: dict[str, bytes] = {}
    with container(client, image, ["true"], None, NO_DEVICES, platform) as made:
        for path in paths:
            try:
                stream, _ = made.get_archive(path)
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


def run_container(
    client: docker.DockerClient,
    image: str,
    command: list[str],
    workdir: str | None,
    access: DeviceAccess,
    timeout: float,
    entrypoint: Sequence[str] | None,
) -> RunResult:
    """Run a command in a throwaway container (no network), through the image's entrypoint unless
    another is given; its exit code and combined output."""
    with container(client, image, command, workdir, access, entrypoint=entrypoint) as made:
        try:
            made.start()
            status = made.wait(timeout=timeout)
            output = made.logs(stdout=True, stderr=True).decode(errors="replace")
        except requests.RequestException as err:
            raise EngineError(f"a container of {image} did not finish within {timeout:.0f}s") from err
        except docker.errors.DockerException as err:
            raise EngineError(f"running a container of {image} failed: {err}") from err
        return RunResult(int(status.get("StatusCode", 1)), output)
