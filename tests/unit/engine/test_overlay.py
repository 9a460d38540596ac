"""A layer read from an overlay2 data root: its tar reassembled from the diff directory and the
tar-split record as `docker save` does, checked against the diff id, found through the layer
store's chain ids; normalised, the same bytes as the saved image gives. (On a real engine:
tests/docker/test_overlay.py.)"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import tarfile
from collections.abc import Iterable
from pathlib import Path

import pytest

from builder.engine.overlay import StoredLayer, StoredTar, image_layer_dirs, joined_pieces
from builder.execute.normalise import normalise, normalise_dirs
from tests.layer_tars import EPOCH, LATER, layer, saved


def store(data: bytes, at: Path) -> StoredLayer:
    """A layer tar kept as Docker keeps it: its files extracted into a directory and a tar-split
    record of everything else (headers, padding, the end), each file by name and size."""
    directory, records, position, offset = at / "diff", [], 0, 0
    directory.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            records.append({"type": 2, "payload": base64.b64encode(data[offset : member.offset_data]).decode()})
            records.append({"type": 1, "name": member.name, "size": member.size})
            offset = member.offset_data + member.size
            if member.isfile():
                (directory / member.name).parent.mkdir(parents=True, exist_ok=True)
                (directory / member.name).write_bytes(data[member.offset_data : offset])
    records.append({"type": 2, "payload": base64.b64encode(data[offset:]).decode()})
    with gzip.open(at / "tar-split.json.gz", "wt") as out:
        for record in records:
            out.write(json.dumps({**record, "position": (position := position + 1)}) + "\n")
    return StoredLayer(f"sha256:{hashlib.sha256(data).hexdigest()}", directory, at / "tar-split.json.gz")


def reassembled(stored: StoredLayer) -> bytes:
    reader = StoredTar(stored)
    data = io.BufferedReader(reader).read()
    assert f"sha256:{reader.sha256.hexdigest()}" == f"sha256:{hashlib.sha256(data).hexdigest()}"
    return data


LONG = "opt/" + "d" * 120 + "/file"  # a pax path record


def test_a_stored_layer_reassembles_to_its_tar_byte_for_byte(tmp_path: Path) -> None:
    data = layer([("opt/", None, LATER), ("opt/a", b"a" * 3000, LATER), (LONG, b"long", LATER), ("opt/e", b"", 5)])
    assert reassembled(store(data, tmp_path)) == data


def test_a_file_changed_missing_or_resized_on_disk_is_found(tmp_path: Path) -> None:
    data = layer([("opt/a", b"aaaa", LATER)])
    stored = store(data, tmp_path)
    (stored.directory / "opt" / "a").write_bytes(b"abcd")  # same size, other bytes: the digest says so
    assert hashlib.sha256(reassembled(stored)).hexdigest() != stored.diff_id.removeprefix("sha256:")
    (stored.directory / "opt" / "a").write_bytes(b"aaaaa")
    with pytest.raises(ValueError, match="longer"):
        reassembled(stored)
    (stored.directory / "opt" / "a").unlink()
    with pytest.raises(OSError):
        reassembled(stored)


def test_a_record_naming_a_file_outside_the_layer_is_refused(tmp_path: Path) -> None:
    stored = store(layer([("opt/a", b"a", LATER)]), tmp_path)
    with gzip.open(stored.tar_split, "wt") as out:
        out.write(json.dumps({"type": 1, "name": "../../etc/shadow", "size": 1, "position": 0}) + "\n")
    with pytest.raises(ValueError, match="outside"):
        reassembled(stored)


def data_root(tmp_path: Path, layers: list[bytes]) -> tuple[Path, str, dict[str, object]]:
    """An overlay2 data root holding one image of these layers; its id and config."""
    root = tmp_path / "docker"
    diff_ids = [f"sha256:{hashlib.sha256(data).hexdigest()}" for data in layers]
    config: dict[str, object] = {"rootfs": {"type": "layers", "diff_ids": diff_ids}, "created": "2026-12-01T00:00:00Z"}
    body = json.dumps(config).encode()
    image_id = hashlib.sha256(body).hexdigest()
    (root / "image/overlay2/imagedb/content/sha256").mkdir(parents=True)
    (root / "image/overlay2/imagedb/content/sha256" / image_id).write_bytes(body)
    chain = ""
    for index, (diff_id, data) in enumerate(zip(diff_ids, layers, strict=True)):
        chain = diff_id if not chain else "sha256:" + hashlib.sha256(f"{chain} {diff_id}".encode()).hexdigest()
        stored = root / "image/overlay2/layerdb/sha256" / chain.removeprefix("sha256:")
        stored.mkdir(parents=True)
        (stored / "diff").write_text(diff_id)
        (stored / "cache-id").write_text(f"cache{index}")
        kept = store(data, root / "overlay2" / f"cache{index}")
        kept.tar_split.rename(stored / "tar-split.json.gz")
    return root, f"sha256:{image_id}", config


def sent_layers(archive: Iterable[bytes]) -> list[bytes]:
    """The layer tars a load's archive carries, bottom first."""
    with tarfile.open(fileobj=io.BytesIO(b"".join(archive))) as tar:
        return [tar.extractfile(m).read() for m in tar.getmembers() if m.name.endswith("layer.tar")]  # type: ignore[union-attr]


def test_an_image_read_from_the_data_root_normalises_as_its_saved_archive_does(tmp_path: Path) -> None:
    parent = layer([("etc/", None, LATER), ("etc/os", b"debian", LATER)])
    own = layer([("opt/", None, LATER), ("opt/a", b"a", LATER + 1), (LONG, b"long", LATER), ("opt/.wh.gone", b"", 1)])
    root, image_id, config = data_root(tmp_path, [parent, own])
    found = image_layer_dirs(root, image_id)
    assert found is not None and [s.directory for s in found.layers] == [
        root / "overlay2" / f"cache{i}" / "diff" for i in range(2)
    ]
    parents = frozenset({f"sha256:{hashlib.sha256(parent).hexdigest()}"})
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    from_dirs = normalise_dirs(found, parents, EPOCH)
    through_save = normalise(saved([parent, own], config), parents, EPOCH, tmp_path / "b")
    assert from_dirs is not None and not from_dirs.settled  # its rewritten layer is made as it is sent
    assert sent_layers(from_dirs.archive()) == sent_layers(through_save.archive())
    assert from_dirs.config == through_save.config
    (found.layers[1].directory / "opt" / "a").write_bytes(b"b")  # the store no longer holds this image
    changed = normalise_dirs(found, parents, EPOCH)  # read by its headers alone: the same names and sizes
    assert changed is not None
    sent: list[bytes] = []
    with pytest.raises(ValueError, match="does not reassemble from the engine's data root"):
        sent.extend(changed.archive())  # checked beside the layers as they are sent
    assert sent and b"manifest.json" not in b"".join(sent)  # before the config and manifest: no image loads
    (found.layers[1].directory / "opt" / "a").write_bytes(b"bb")
    assert normalise_dirs(found, parents, EPOCH) is None  # not the size recorded: known at once


def test_an_image_not_in_the_data_root_or_not_matching_it_is_none(tmp_path: Path) -> None:
    root, image_id, _ = data_root(tmp_path, [layer([("a", b"a", LATER)]), layer([("b", b"b", LATER)])])
    assert image_layer_dirs(root, "sha256:" + "f" * 64) is None  # another machine's image
    first = next((root / "image/overlay2/layerdb/sha256").glob("*/diff"))
    first.write_text("sha256:" + "9" * 64)
    assert image_layer_dirs(root, image_id) is None  # the store disagrees with the config


def test_a_skeleton_joins_the_bytes_between_files_and_leaves_out_empty_pieces() -> None:
    """Two tars with the same skeleton are the same tar whatever pieces their records split it in."""
    assert joined_pieces([b"head", b"", b"er", 3, b"", 0, 5, b"pad", b"end"]) == [b"header", 3, 5, b"padend"]
    assert joined_pieces([b"", 0]) == [] and joined_pieces([7]) == [7]
