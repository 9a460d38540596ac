"""Normalising a built stage image so the same inputs give the same bytes (the same image ID, and
the same registry digests): Docker 20.10 has no SOURCE_DATE_EPOCH, so the image is read out
(layer_read: on a local overlay2 engine, each layer's tar reassembled from the data root as
`docker save` does, else with `docker save`), which of its layers are its own and how many are sent
decided (layer_fold), those rewritten (layer_rewrite) and, with its config, loaded back (image_load).
The layers rewritten from the data root are made as they are sent to the load, nothing spooled. A
layer is rewritten from its bytes alone, so the same built layer (the same diff id: the builder's
cache reused its step) gives the same rewrite: what it gave is remembered (`memo_key`), and an own
layer the engine holds already as rewritten, on the same layers below, is neither read nor sent again
(`Normalised.known`)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import IO

from builder.engine import LayerDirs, overlay
from builder.execute import go_tar, image_load, layer_fold, layer_read, layer_rewrite
from builder.execute.image_load import Normalised, Sent
from builder.execute.layer_fold import fold_groups, folded_away, inherited, merged_members, sent_path
from builder.execute.layer_read import file_chunks, layer_headers, spooled, stored_members, unpack
from builder.execute.layer_rewrite import canonical_entries, layer_chunks, layer_size, skeleton, write_layer
from builder.model.canonical import code_digest

# What a remembered rewrite was made by: the normalising modules, the header writer and the layer
# reader (a change to how layers are read or rewritten forgets them), on this Python's tarfile.
_MODULES = (sys.modules[__name__], layer_read, layer_fold, layer_rewrite, image_load, overlay, go_tar)
REWRITER = f"{code_digest(*_MODULES)} {sys.version_info[0]}.{sys.version_info[1]}"


def memo_key(built: tuple[str, ...], epoch: int) -> str:
    """The name a layer's rewrite is remembered by: the built layers' diff ids (several folded into
    one), the source date it was dated by and the code that rewrote it (all it depends on)."""
    return hashlib.sha256(f"{' '.join(built)} {epoch} {REWRITER}".encode()).hexdigest()


def normalise(
    saved: IO[bytes],
    parent_layers: frozenset[str],
    epoch: int,
    scratch: Path,
    own_from: int | None = None,
    fold: bool = False,
) -> Normalised:
    """A `docker save` stream of one image, normalised: the bottom layers its parents have (by diff
    id; own_from: how many, when the parent it is FROM is known) as they are, the rest rewritten
    (fold: small ones folded together). scratch: a directory for the layers on their way."""
    unpacked = unpack(saved, scratch)
    pending, config = unpacked.files, unpacked.config
    built: list[str] = list(config["rootfs"]["diff_ids"])
    own = range(inherited(built, parent_layers) if own_from is None else own_from, len(built))
    files = [pending[unpacked.paths[index]] for index in own]
    groups = fold_groups([layer_headers(file) for file in files]) if fold else [[n] for n in range(len(files))]
    diff_ids, paths = built[: own.start], unpacked.paths[: own.start]
    sent: list[Sent] = []
    changed: list[str] = []
    for group in groups:
        path = sent_path(unpacked.paths, built, own, group)
        rewritten = files[group[-1]].with_suffix(f".normal-{len(paths)}")
        with contextlib.ExitStack() as open_files, rewritten.open("wb") as out:
            layers = []
            for n in group:  # each layer's data spooled until it is written (a folded one with the others)
                spool = open_files.enter_context(tempfile.TemporaryFile(dir=scratch))
                with files[n].open("rb") as layer:
                    layers.append(list(spooled(layer, spool)))
            diff_ids.append(write_layer(merged_members(layers), out, epoch, changed))
        chunks = functools.partial(file_chunks, rewritten)
        sent.append(Sent(path, len(paths), rewritten.stat().st_size, chunks, tuple(built[own[n]] for n in group)))
        paths.append(path)
    return Normalised(config, diff_ids, paths, sent, epoch, changed, folded=folded_away(own, groups))


def normalise_dirs(
    image: LayerDirs, parent_layers: frozenset[str], epoch: int, own_from: int | None = None, fold: bool = False
) -> Normalised | None:
    """The same image as normalise gives, its layers read from the engine's data root: the rewritten
    ones made as they are sent, nothing spooled; None when they cannot be read there as `docker save`
    would give them."""
    config = json.loads(image.config)
    built: list[str] = list(config["rootfs"]["diff_ids"])
    paths = [f"{diff_id.removeprefix('sha256:')}/layer.tar" for diff_id in built]
    sent: list[Sent] = []
    changed: list[str] = []
    links: list[str] = []
    own = range(inherited(built, parent_layers) if own_from is None else own_from, len(built))
    diff_ids, sent_paths = built[: own.start], paths[: own.start]
    try:
        stored = [stored_members(image.layers[index]) for index in own]
        layers = [members for members, _ in stored]
        groups = fold_groups(layers) if fold else [[n] for n in range(len(layers))]
        for group in groups:
            before = len(changed)
            entries = canonical_entries(merged_members([layers[n] for n in group]), epoch, changed)
            links += [entry.info.name for entry in entries if entry.info.issym()]
            chunks = functools.partial(layer_chunks, entries, epoch)
            path = sent_path(paths, built, own, group)
            # Nothing left out or changed, and the same bytes between the same files: it is the built layer.
            canonical = len(group) == 1 and len(changed) == before and skeleton(entries) == stored[group[0]][1]
            size, from_layers = layer_size(entries), tuple(built[own[n]] for n in group)
            sent.append(Sent(path, len(diff_ids), size, chunks, from_layers, canonical))
            diff_ids.append("")  # known once it was sent
            sent_paths.append(path)
    except (OSError, ValueError, EOFError, tarfile.TarError):
        return None  # a file gone or unreadable, or a store this code does not read as Docker does
    unchecked = [image.layers[index] for index in own]
    return Normalised(config, diff_ids, sent_paths, sent, epoch, changed, unchecked, links, folded_away(own, groups))
