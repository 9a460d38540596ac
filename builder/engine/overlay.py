"""An image's layers read from a local overlay2 engine's data root, byte for byte as `docker save`
gives them, without the engine tarring the image's whole chain into a temporary directory first.

Docker keeps each layer as its diff directory (the files) and a tar-split record (the tar's headers
and padding, and each file's name and size); `docker save` reassembles the layer's tar from the two,
and so does `StoredTar`. The reassembled bytes are hashed as they are read: a tar whose sha256 is
not the layer's diff id is not that layer, and the caller falls back to `docker save`.
`StoredHeaders` gives the same tar's headers without reading the files' data (their sizes checked),
so what normalising changes is known at once; `reassembles` checks the bytes (as they are sent,
before the image's config is)."""

from __future__ import annotations

import base64
import bisect
import gzip
import hashlib
import io
import json
import posixpath
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

# tar-split's record types (github.com/vbatts/tar-split/tar/storage)
FILE_RECORD, SEGMENT_RECORD = 1, 2


@dataclass(frozen=True)
class StoredLayer:
    diff_id: str  # sha256 of the layer's tar
    directory: Path  # its files (overlay2's diff directory)
    tar_split: Path  # its tar-split record (tar-split.json.gz)


@dataclass(frozen=True)
class LayerDirs:
    """An image as it sits in the engine's data root."""

    config: bytes  # the image config, byte for byte (its sha256 is the image id)
    layers: list[StoredLayer]  # bottom first


def image_layer_dirs(root: Path, image_id: str) -> LayerDirs | None:
    """image_id's config and stored layers under an overlay2 data root; None when they are not there
    (another machine's engine, or a store this process cannot read)."""
    digest = image_id.removeprefix("sha256:")
    try:
        config = (root / "image/overlay2/imagedb/content/sha256" / digest).read_bytes()
        if hashlib.sha256(config).hexdigest() != digest:
            return None
        layers = []
        diff_ids = json.loads(config)["rootfs"]["diff_ids"]
        for diff_id, chain in zip(diff_ids, chain_ids(diff_ids), strict=True):
            stored = _layer_record(root, chain)
            if (stored / "diff").read_text().strip() != diff_id:
                return None
            directory = root / "overlay2" / (stored / "cache-id").read_text().strip() / "diff"
            if not directory.is_dir() or not (stored / "tar-split.json.gz").is_file():
                return None
            layers.append(StoredLayer(diff_id, directory, stored / "tar-split.json.gz"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return LayerDirs(config, layers)


def chain_ids(diff_ids: list[str]) -> list[str]:
    """Each layer's chain id: what the layer store keys it by (the layers up to it, bottom first)."""
    chains: list[str] = []
    for diff_id in diff_ids:
        below = chains[-1] if chains else ""
        chains.append(diff_id if not below else f"sha256:{hashlib.sha256(f'{below} {diff_id}'.encode()).hexdigest()}")
    return chains


def _layer_record(root: Path, chain: str) -> Path:
    return root / "image/overlay2/layerdb/sha256" / chain.removeprefix("sha256:")


def held_layers(root: Path, diff_ids: list[str]) -> int:
    """How many of the bottom layers of diff_ids an overlay2 data root holds, each on the ones below."""
    for held, (diff_id, chain) in enumerate(zip(diff_ids, chain_ids(diff_ids), strict=True)):
        try:
            if (_layer_record(root, chain) / "diff").read_text().strip() != diff_id:
                return held
        except OSError:
            return held
    return len(diff_ids)


class StoredTar(io.RawIOBase):
    """A stored layer's tar, reassembled as it is read; `sha256` hashes what was read so far.
    Reading raises OSError or ValueError when a file is missing, unreadable or not its recorded size."""

    def __init__(self, layer: StoredLayer) -> None:
        super().__init__()
        self.sha256 = hashlib.sha256()
        self._pieces = _pieces(layer)
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            piece = next(self._pieces, None)
            if piece is None:
                return 0
            self._pending = memoryview(piece)
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self.sha256.update(self._pending[:size])
        self._pending = self._pending[size:]
        return size


class StoredHeaders(io.RawIOBase):
    """A stored layer's tar with each file's data left unread (zeros of its recorded size), seekable
    so tarfile skips over it: the tar's headers, as fast as the tar-split record reads. Each file is
    checked to be there at its recorded size; its bytes are only checked by reading a StoredTar."""

    def __init__(self, layer: StoredLayer) -> None:
        super().__init__()
        self._starts: list[int] = []
        self._pieces: list[bytes | int] = []  # a segment's bytes, or a file's size
        end = 0
        with gzip.open(layer.tar_split, "rt", encoding="utf-8") as records:
            for line in records:
                record = json.loads(line)
                if record["type"] == SEGMENT_RECORD:
                    piece: bytes | int = base64.b64decode(record.get("payload") or b"")
                elif record["type"] == FILE_RECORD and record.get("size"):
                    name, piece = stored_name(record), int(record["size"])
                    if (layer.directory / name).stat().st_size != piece:
                        raise ValueError(f"{name} is not the size its stored layer records")
                else:
                    continue
                self._starts.append(end)
                self._pieces.append(piece)
                end += piece if isinstance(piece, int) else len(piece)
        self._size, self._at = end, 0

    @property
    def skeleton(self) -> list[bytes | int]:
        """The tar as its bytes between files and each file's size (bytes next to each other joined):
        another tar with the same skeleton and the same files has the same bytes."""
        return joined_pieces(self._pieces)

    @property
    def file_starts(self) -> list[int]:
        """Where each file's data starts in the tar: where tarfile must find a member's data."""
        return [start for start, piece in zip(self._starts, self._pieces, strict=True) if isinstance(piece, int)]

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._at = max(0, {io.SEEK_SET: 0, io.SEEK_CUR: self._at, io.SEEK_END: self._size}[whence] + offset)
        return self._at

    def tell(self) -> int:
        return self._at

    def readinto(self, buffer: Any) -> int:
        if self._at >= self._size:
            return 0
        index = bisect.bisect_right(self._starts, self._at) - 1
        piece, inside = self._pieces[index], self._at - self._starts[index]
        length = piece if isinstance(piece, int) else len(piece)
        size = min(len(buffer), length - inside)
        buffer[:size] = bytes(size) if isinstance(piece, int) else piece[inside : inside + size]
        self._at += size
        return size


def joined_pieces(pieces: Iterable[bytes | int]) -> list[bytes | int]:
    """pieces with the bytes next to each other joined and empty ones left out."""
    joined: list[bytes | int] = []
    run: list[bytes] = []  # the bytes since the last size, joined once (not copied again at each piece)
    for piece in pieces:
        if isinstance(piece, bytes):
            run.append(piece)
        elif piece:
            joined += [b"".join(run), piece] if any(run) else [piece]
            run = []
    return [*joined, b"".join(run)] if any(run) else joined


def reassembles(layer: StoredLayer, stop: threading.Event | None = None) -> None:
    """ValueError (or OSError) unless the layer's files and tar-split record reassemble to its tar
    (stop set: it returns, unchecked; whoever set it no longer needs the answer)."""
    stored = StoredTar(layer)
    while stored.read(1 << 20):
        if stop is not None and stop.is_set():
            return
    if f"sha256:{stored.sha256.hexdigest()}" != layer.diff_id:
        raise ValueError(f"layer {layer.diff_id} does not reassemble from the engine's data root")


def _pieces(layer: StoredLayer) -> Iterator[bytes]:
    with gzip.open(layer.tar_split, "rt", encoding="utf-8") as records:
        for line in records:
            record = json.loads(line)
            if record["type"] == SEGMENT_RECORD:
                yield base64.b64decode(record.get("payload") or b"")
            elif record["type"] == FILE_RECORD and record.get("size"):
                yield from _file(layer.directory, stored_name(record), int(record["size"]))


def stored_name(record: dict[str, Any]) -> str:
    """A file record's name (name_raw, base64, when it is not UTF-8), as a path in its directory."""
    raw = base64.b64decode(record["name_raw"]) if record.get("name_raw") else str(record["name"]).encode()
    return inside_layer(raw.decode("utf-8", "surrogateescape"))


def inside_layer(name: str) -> str:
    """name, a path in a layer's directory; ValueError when it would lead outside it."""
    if posixpath.isabs(name) or ".." in name.split("/"):
        raise ValueError(f"a stored layer names a file outside it: {name!r}")
    return name


def sized_chunks(handle: IO[bytes], size: int, name: str) -> Iterator[bytes]:
    """size bytes of handle, a MiB at a time; ValueError naming name when it has fewer."""
    left = size
    while left:
        chunk = handle.read(min(left, 1 << 20))
        if not chunk:
            raise ValueError(f"{name} is shorter than its stored layer records")
        left -= len(chunk)
        yield chunk


def _file(directory: Path, name: str, size: int) -> Iterator[bytes]:
    with (directory / name).open("rb") as handle:
        yield from sized_chunks(handle, size, name)
        if handle.read(1):
            raise ValueError(f"{name} is longer than its stored layer records")
