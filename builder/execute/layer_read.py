"""Reading a built image's layers for normalising: a `docker save` stream unpacked into scratch files,
each layer's entries read with their data spooled until it is written; or, on a local overlay2 engine,
each stored layer's entries read from its headers alone, every file's data opened from the layer's
directory when it is written (nothing spooled)."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import posixpath
import shutil
import tarfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from builder.engine.overlay import StoredHeaders, StoredLayer, inside_layer

# A layer's entry as read (its name without "./"), and how to open its data (None: it has none).
Opener = Callable[[], AbstractContextManager[IO[bytes]]]
Member = tuple[tarfile.TarInfo, Opener | None]


def spooled(layer: IO[bytes], spool: IO[bytes]) -> Iterator[Member]:
    with tarfile.open(fileobj=layer, mode="r|") as tar:
        for member in tar:
            handle = tar.extractfile(member) if member.isfile() else None
            if handle is None:
                yield member, None
                continue
            offset = spool.tell()
            shutil.copyfileobj(handle, spool, 1 << 20)
            # A sparse file's data comes expanded: what was spooled is its size.
            member.size = spool.tell() - offset
            yield member, functools.partial(_at, spool, offset)


@contextlib.contextmanager
def _at(spool: IO[bytes], offset: int) -> Iterator[IO[bytes]]:
    spool.seek(offset)
    yield spool


def file_chunks(file: Path) -> Iterator[bytes]:
    with file.open("rb") as handle:
        yield from iter(functools.partial(handle.read, 1 << 20), b"")


def layer_headers(layer: Path) -> list[Member]:
    with tarfile.open(layer, "r:") as tar:
        return [(member, None) for member in tar]


def stored_members(layer: StoredLayer) -> tuple[list[Member], list[bytes | int]]:
    """A stored layer's entries, read from its headers alone (Normalised.archive checks the files'
    bytes reassemble to the layer as they are sent), each file's data opened from the layer's
    directory when it is written (not spooled); and its tar's skeleton."""
    headers, found, members = StoredHeaders(layer), [], []
    with io.BufferedReader(headers, 1 << 16) as reader, tarfile.open(fileobj=reader, mode="r:") as tar:
        for member in tar:
            path = layer.directory / inside_layer(member.name)
            if member.isfile() and member.size:
                found.append(member.offset_data)
            members.append((member, _opener(path) if member.isfile() and member.size else None))
    if found != headers.file_starts:  # a member list cut short, or data read where a header was
        raise ValueError(f"layer {layer.diff_id}'s headers do not read as its stored tar")
    return members, headers.skeleton


def _opener(path: Path) -> Opener:
    return lambda: path.open("rb")


@dataclass(frozen=True)
class Saved:
    """A `docker save` archive unpacked: the config, and each layer's tar by its manifest path."""

    config: dict[str, Any]
    paths: list[str]  # the manifest's layer paths, bottom first
    files: dict[str, Path]


def unpack(saved: IO[bytes], scratch: Path) -> Saved:
    """Read a `docker save` stream: every file into scratch (its manifest comes last, so every layer is
    kept aside until it is read; Docker 25's OCI layout keeps layers under blobs/), a layer saved
    twice as a link to the first."""
    files: dict[str, Path] = {}
    links: dict[str, str] = {}
    with tarfile.open(fileobj=saved, mode="r|") as tar:
        for member in tar:
            if member.issym():
                links[member.name] = posixpath.normpath(posixpath.join(posixpath.dirname(member.name), member.linkname))
            handle = tar.extractfile(member) if member.isfile() else None
            if handle is not None:
                files[member.name] = scratch / f"saved-{len(files)}"
                with files[member.name].open("wb") as out:
                    shutil.copyfileobj(handle, out, 1 << 20)
    files |= {name: files[target] for name, target in links.items() if target in files}
    if "manifest.json" not in files:
        raise ValueError("the engine's image archive has no manifest.json")
    (manifest,) = json.loads(files["manifest.json"].read_bytes())
    config = json.loads(files[manifest["Config"]].read_bytes())
    paths = list(manifest["Layers"])
    if len(paths) != len(config["rootfs"]["diff_ids"]):
        raise ValueError(f"the image archive lists {len(paths)} layers, its config {len(config['rootfs']['diff_ids'])}")
    return Saved(config, paths, files)
