"""A normalised image as the engine loads it: its own layers sent as they are made (each hashed on its
way: its diff id), its config with every date the source date and what names the build rather than
the image (BuildKit's buildinfo, the classic builder's container) dropped, and the `docker load`
archive of the two. The parents' layers are neither rewritten nor sent (the engine has them, and a
load skips layers it has); an image built on its parent as built is put over the parent's normalised
layers (rebased), and an own layer the engine holds already as rewritten is not sent again (known)."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime
import hashlib
import json
import tarfile
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from builder.engine.overlay import StoredLayer, reassembles

# Config keys that name the build, not the image.
BUILD_ONLY = ("moby.buildkit.buildinfo.v1", "container", "container_config", "docker_version")


@dataclass(frozen=True)
class Sent:
    """A layer the load needs: its path in the load's manifest, its place in the image, its size,
    its bytes, made as they are sent, and the diff ids of the built layers they are rewritten from
    (several when folded into one)."""

    path: str
    index: int
    size: int
    chunks: Callable[[], Iterator[bytes]]
    built: tuple[str, ...]
    # Its rewrite is the built layer byte for byte (its files canonical as built): the engine may
    # hold it already.
    canonical: bool = False


@dataclass
class Normalised:
    """An image normalised: its own layers to be sent (each rewritten as it is sent from the data
    root, its diff id known once it was)."""

    source: dict[str, Any]  # the built image's config
    diff_ids: list[str]  # the layers the loaded image has, bottom first ("": a layer not sent yet)
    paths: list[str]  # every layer's path in the load's manifest, bottom first
    sent: list[Sent]  # the layers the engine lacks, bottom first
    epoch: int
    # Files of its own layers normalising leaves out or whose bytes it changes (a .pyc stamp, shadow's
    # days), known before any is sent; none: its files are the ones built, only dated and owned by
    # number. A child built on the image as built sees the same files then.
    changed: list[str] = field(default_factory=list)
    # Stored layers read by their headers alone: archive() checks their bytes as it sends the layers.
    unchecked: list[StoredLayer] = field(default_factory=list)
    links: list[str] = field(default_factory=list)  # the symbolic links of its own layers (read from the data root)
    folded: frozenset[int] = frozenset()  # built layers folded into the one above: no layer in the history

    def known(self, rewritten: Mapping[int, str]) -> Normalised:
        """This image with the own layers at those indexes taken as rewritten before (their diff ids
        given; the engine holds them on the same layers below): not read, not sent."""
        sent = [layer for layer in self.sent if layer.index not in rewritten]
        still = {built for layer in sent for built in layer.built}
        diff_ids = [rewritten.get(index, diff_id) for index, diff_id in enumerate(self.diff_ids)]
        unchecked = [stored for stored in self.unchecked if stored.diff_id in still]
        return dataclasses.replace(self, diff_ids=diff_ids, sent=sent, unchecked=unchecked)

    @property
    def settled(self) -> bool:
        """Whether every diff id is known (before the load: no layer is made as it is sent)."""
        return all(self.diff_ids)

    @property
    def config(self) -> bytes:
        """The image config as loaded (its sha256 is the image ID); once settled."""
        if not self.settled:
            raise ValueError("a layer's diff id is known only once it was sent")
        return image_config(self.source, self.diff_ids, self.epoch, self.folded)

    @property
    def image_id(self) -> str:
        return f"sha256:{hashlib.sha256(self.config).hexdigest()}"

    def archive(self) -> Iterator[bytes]:
        """What `docker load` reads, as it is sent: the layers the engine lacks (each hashed on its
        way: its diff id), the config, the manifest. Nothing is copied into one archive on disk. The
        stored layers they were read from are checked to reassemble while they are sent, beside them
        (hashing releases the interpreter): ValueError before the config goes, so a load of layers
        that did not reassemble has no manifest and makes no image."""
        stop = threading.Event()
        with concurrent.futures.ThreadPoolExecutor(1) as checker:
            checked = checker.submit(_reassemble, list(self.unchecked), stop)
            try:
                for layer in self.sent:
                    digest = hashlib.sha256()
                    yield from _member(layer.path, layer.size, _hashed(layer.chunks(), digest, layer.size))
                    self.diff_ids[layer.index] = f"sha256:{digest.hexdigest()}"
            except BaseException:  # a layer unreadable, or the load gave up (closed): no answer is needed
                stop.set()
                raise
            checked.result()
        config = self.config
        name = f"{hashlib.sha256(config).hexdigest()}.json"
        manifest = json.dumps([{"Config": name, "RepoTags": None, "Layers": self.paths}]).encode()
        for member, data in ((name, config), ("manifest.json", manifest)):
            yield from _member(member, len(data), iter((data,)))
        yield tarfile.NUL * (2 * tarfile.BLOCKSIZE)  # the end of the archive


def _reassemble(layers: list[StoredLayer], stop: threading.Event) -> None:
    for stored in layers:
        reassembles(stored, stop)


def _hashed(chunks: Iterator[bytes], digest: Any, size: int) -> Iterator[bytes]:
    """chunks, hashed on their way; ValueError unless they are size bytes (the archive's member says so)."""
    count = 0
    for chunk in chunks:
        digest.update(chunk)
        count += len(chunk)
        yield chunk
    if count != size:
        raise ValueError(f"a layer came out {count} bytes long where {size} were announced")


def _member(name: str, size: int, data: Iterator[bytes]) -> Iterator[bytes]:
    info = tarfile.TarInfo(name)
    info.size = size
    yield info.tobuf(tarfile.PAX_FORMAT)
    yield from data
    yield tarfile.NUL * (-size % tarfile.BLOCKSIZE)  # a member's data fills whole blocks


def image_config(
    config: dict[str, Any], diff_ids: list[str], epoch: int, folded: frozenset[int] = frozenset()
) -> bytes:
    """The image config as loaded: every date the source date, what names the build left out, the
    folded layers' steps empty, the layers these diff ids."""
    created = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    kept = {k: v for k, v in config.items() if k not in BUILD_ONLY}
    if isinstance(kept.get("config"), dict) and kept["config"].get("Image"):
        # The classic builder names the previous step's image, whose id holds that step's time.
        kept["config"] = {**kept["config"], "Image": ""}
    kept["created"] = created
    history: list[dict[str, Any]] = config.get("history", [])
    # A folded layer's step makes no layer of its own. The history's entries that made layers are
    # matched to the built layers from the top, where the stage's own are.
    made = [position for position, entry in enumerate(history) if not entry.get("empty_layer")]
    below = len(made) - len(config["rootfs"]["diff_ids"])
    emptied = {made[below + index] for index in folded if 0 <= below + index < len(made)}
    kept["history"] = [
        {**entry, "created": created, **({"empty_layer": True} if position in emptied else {})}
        for position, entry in enumerate(history)
    ]
    kept["rootfs"] = {**config["rootfs"], "diff_ids": diff_ids}
    return json.dumps(kept, sort_keys=True, separators=(",", ":")).encode()


def rebased(normal: Normalised, below: int, settled: list[str]) -> Normalised:
    """normal over its parent as normalised: its bottom `below` layers (the parent's as it was built,
    before it was normalised: the stage was built on that) swapped for settled, the parent's
    normalised layers. Only the stage's own layers are its own, so its image is the same as if it had
    been built on the normalised parent (whose files differ only in what normalising settles)."""
    if len(settled) != below:
        raise ValueError(f"the parent's normalised image has {len(settled)} layers where it was built with {below}")
    if {layer.index for layer in normal.sent} != set(range(below, len(normal.diff_ids))):
        raise ValueError("a layer of its own has a parent's bytes: it is not sent, and cannot go over another parent")
    diff_ids = [*settled, *normal.diff_ids[below:]]
    paths = [*(f"{d.removeprefix('sha256:')}/layer.tar" for d in settled), *normal.paths[below:]]
    return dataclasses.replace(normal, diff_ids=diff_ids, paths=paths)
