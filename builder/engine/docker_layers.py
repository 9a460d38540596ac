"""The LayerStore on a Docker daemon: an image read out (`docker save`, or its layers' directories in
an overlay2 engine's data root on this machine) and loaded back, the layers the daemon holds and the
disk they take, and an image's config set by instructions the daemon applies (no layer added)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any

import docker.errors
import requests

from builder.engine.docker_containers import container
from builder.engine.docker_daemon import DockerDaemon
from builder.engine.docker_images import image_facts, remove_image
from builder.engine.overlay import LayerDirs, held_layers, image_layer_dirs
from builder.engine.protocol import NO_DEVICES, EngineError

# The history line of an image configure made (the command of the container committed, never run).
CONFIGURED_BY = "stackbuild: config set by instructions (ENV, ENTRYPOINT, CMD), no layer"


class DockerLayerStore(DockerDaemon):
    """The daemon's image store read and written directly: what normalising an image needs."""

    def layer_dirs(self, image_id: str) -> LayerDirs | None:
        root = self.overlay_root
        return image_layer_dirs(root, image_id) if root is not None else None

    def held(self, diff_ids: list[str]) -> int:
        root = self.overlay_root
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

    def configure(self, image: str, changes: Sequence[str]) -> str:
        # A container committed unchanged: its empty layer is not added (the image's layers stay its
        # parent's), and the daemon applies the instructions with the Dockerfile's own rules. The
        # image's config is given whole, so nothing of the container (its hostname) enters it.
        try:
            config = self.client.api.inspect_image(image)["Config"]
        except (docker.errors.DockerException, requests.RequestException) as err:
            raise EngineError(f"cannot read the config of {image}: {err}") from err
        with container(self.client, image, [CONFIGURED_BY], None, NO_DEVICES) as made:
            try:
                committed = str(self.client.api.commit(str(made.id), conf=config, changes=list(changes))["Id"])
            except (docker.errors.DockerException, requests.RequestException) as err:
                raise EngineError(f"cannot set the config of {image}: {err}") from err
        # The container was never started, but creating it can write (a WORKDIR made, a VOLUME set up).
        if image_facts(self.client, committed).layers != image_facts(self.client, image).layers:
            remove_image(self.client, committed)
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
