"""Normalising a built stage image so the same inputs give the same bytes (the same image ID, and
the same registry digests): Docker 20.10 has no SOURCE_DATE_EPOCH, so the image is read out
(on a local overlay2 engine, each layer's tar reassembled from the data root as `docker save` does,
else with `docker save`), its own layers and its config rewritten, and loaded back.

In each layer the stage added, written as Docker's archiver writes a tar (go_tar: its walk order,
its headers): mtimes clamped to the lock's source date, owners by number (root by name: CANN runs as
HwHiAiUser), timestamp .pyc headers clamped like their sources (so Python still finds them fresh),
the last-change days in /etc/shadow clamped, and what only records when and where a build ran
(ld.so's aux-cache, apt lists and caches, logs) left out; hard links written as their first name in
walk order, whiteouts as bare markers. A layer whose files are canonical as built is thereby its own
rewrite (Sent.canonical): the engine holds it already. In the config: every date is the source date,
and what names the build rather than the image (BuildKit's buildinfo, the classic builder's
container) is dropped. The parents' layers were normalised when they were built: they are neither
rewritten nor sent back (the engine has them, and a load skips layers it has); an image built on its
parent as built is put over the parent's normalised layers (rebased). The layers rewritten from the
data root are made as they are sent to the load, nothing spooled. A layer is rewritten from its
bytes alone, so the same built layer (the same diff id: the builder's cache reused its step) gives
the same rewrite: what it gave is remembered (`memo_key`), and an own layer the engine holds already
as rewritten, on the same layers below, is neither read nor sent again (`Normalised.known`). A stage
no other stage is FROM (its children copy files out of it) has its own small layers folded into one
(`folded`): the engine spends about as long on a layer of a few bytes as on one of megabytes."""

from __future__ import annotations

import concurrent.futures
import contextlib
import copy
import dataclasses
import datetime
import functools
import hashlib
import io
import json
import posixpath
import re
import shutil
import sys
import tarfile
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from builder.engine import LayerDirs, overlay
from builder.engine.overlay import (
    StoredHeaders,
    StoredLayer,
    inside_layer,
    joined_pieces,
    reassembles,
    sized_chunks,
)
from builder.execute import go_tar
from builder.model.canonical import code_digest

# Files that only record a build's time or machine; a stage that writes them leaves the parent's.
# /tmp goes too: a stage hands its children files through its image's tree, never /tmp.
DROPPED = re.compile(
    r"^(var/cache/ldconfig/aux-cache|var/lib/apt/lists/.+|var/cache/apt/.+\.bin|var/cache/debconf/.+-old"
    r"|var/log/.+\.log|var/log/apt/.+|var/log/journal/.+|etc/(passwd|group|shadow|gshadow|subuid|subgid)-"
    r"|root/\.cache/.+|tmp/.+"
    r"|.+/CMakeFiles/(CMakeOutput\.log|CMakeError\.log|CMakeConfigureLog\.yaml))$"
)
WHITEOUT_PREFIX = ".wh."  # a layer's deletion markers (and .wh..wh..opq, an emptied directory)
OPAQUE = ".wh..wh..opq"
# Own layers with less file data than this are folded together; a larger one stays a layer of its own,
# so a rebuild that reuses it need not send it again.
FOLD_BELOW = 64 << 20
PYC_TIMESTAMP_FLAGS = b"\0\0\0\0"  # PEP 552: flags 0 is a timestamp .pyc (mtime at 8:12, size at 12:16)
SECONDS_PER_DAY = 86400
TAR_ENCODING = tarfile.ENCODING  # what tarfile writes names in (the file system's encoding)
# Config keys that name the build, not the image.
BUILD_ONLY = ("moby.buildkit.buildinfo.v1", "container", "container_config", "docker_version")
# What a remembered rewrite was made by: this file, the header writer and the layer reader (a change
# to how layers are read or rewritten forgets them), on this Python's tarfile.
REWRITER = f"{code_digest(sys.modules[__name__], overlay, go_tar)} {sys.version_info[0]}.{sys.version_info[1]}"


def memo_key(built: tuple[str, ...], epoch: int) -> str:
    """The name a layer's rewrite is remembered by: the built layers' diff ids (several folded into
    one), the source date it was dated by and the code that rewrote it (all it depends on)."""
    return hashlib.sha256(f"{' '.join(built)} {epoch} {REWRITER}".encode()).hexdigest()


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
        return _config(self.source, self.diff_ids, self.epoch, self.folded)

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


def _chunks(file: Path) -> Iterator[bytes]:
    with file.open("rb") as handle:
        yield from iter(functools.partial(handle.read, 1 << 20), b"")


def _pyc(data: bytes, epoch: int) -> bytes:
    if len(data) < 16 or data[4:8] != PYC_TIMESTAMP_FLAGS:
        return data
    mtime = int.from_bytes(data[8:12], "little")
    return data[:8] + min(mtime, epoch).to_bytes(4, "little") + data[12:] if mtime > epoch else data


def _shadow(data: bytes, epoch: int) -> bytes:
    days = epoch // SECONDS_PER_DAY
    lines = []
    for line in data.decode(errors="surrogateescape").split("\n"):
        fields = line.split(":")
        if len(fields) > 2 and fields[2].isdigit() and int(fields[2]) > days:
            fields[2] = str(days)
        lines.append(":".join(fields))
    return "\n".join(lines).encode(errors="surrogateescape")


# A layer's entry as read (its name without "./"), and how to open its data (None: it has none).
Opener = Callable[[], AbstractContextManager[IO[bytes]]]
Member = tuple[tarfile.TarInfo, Opener | None]


def _spooled(layer: IO[bytes], spool: IO[bytes]) -> Iterator[Member]:
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


def write_layer(members: Iterable[Member], out: IO[bytes], epoch: int, changed: list[str] | None = None) -> str:
    """The members written in a canonical tar (see canonical_entries); the tar's diff id (sha256)."""
    digest = hashlib.sha256()
    for chunk in layer_chunks(canonical_entries(members, epoch, changed), epoch):
        digest.update(chunk)
        out.write(chunk)
    return f"sha256:{digest.hexdigest()}"


@dataclass(frozen=True)
class Entry:
    """A canonical tar's entry: its header as written, and how to open its data (None: it has none)."""

    info: tarfile.TarInfo
    header: bytes
    opener: Opener | None


def canonical_entries(members: Iterable[Member], epoch: int, changed: list[str] | None = None) -> list[Entry]:
    """The members as a canonical tar writes them: cleaned, in walk order, each hard link set's first
    name holding the data, /etc/shadow's days clamped (its size can change: it is read here); every member is
    read before any is returned, so a layer that proves unreadable has nothing written yet. changed
    gets the files left out, a shadow whose days change and each .pyc whose stamp does."""
    entries: dict[str, tuple[tarfile.TarInfo, Opener | None]] = {}
    left_out: set[str] = set()
    for member, opener in members:
        name = member.name.removeprefix("./")
        entries[name] = (_clean(member, name, epoch), opener)
        if DROPPED.match(name) and not member.isdir() and not _is_whiteout(name):
            left_out.add(name)
    _relink(entries, left_out)
    if changed is not None:
        changed += sorted(left_out)
    written = []
    for info, opener in sorted(
        (entries[name] for name in entries if name not in left_out), key=lambda entry: walk_order(entry[0].name)
    ):
        if opener is not None and info.isfile() and info.name == "etc/shadow":
            with opener() as data:
                original = data.read(info.size)
            body = _shadow(original, epoch)
            if changed is not None and body != original:
                changed.append(info.name)
            info.size, opener = len(body), _bytes_opener(body)
        if not info.isfile():
            opener = None
        elif changed is not None and opener is not None and info.name.endswith(".pyc"):
            with opener() as data:  # its stamp: what normalising will change is known before it is sent
                head = data.read(16)
            if _pyc(head, epoch) != head:
                changed.append(info.name)
        written.append(Entry(info, _header(info, entries), opener))
    return written


def walk_order(name: str) -> tuple[bytes, ...]:
    """Where name comes in a layer tar Docker's archiver writes: a directory, then its entries by name
    (filepath.Walk), each whole before the next."""
    return tuple(part.encode(TAR_ENCODING, "surrogateescape") for part in name.split("/"))


def _header(info: tarfile.TarInfo, entries: Mapping[str, tuple[tarfile.TarInfo, Opener | None]]) -> bytes:
    """info's header as Docker's archiver writes it: a directory's name ends with "/"; the mode has the
    file type's bits (a hard link its file's), but a whiteout's (Docker makes it a plain 0600 file)."""
    if _is_whiteout(info.name):
        bits = 0
    elif info.islnk():
        target = entries.get(info.linkname)
        bits = go_tar.TYPE_BITS.get(target[0].type if target else tarfile.REGTYPE, 0)
    else:
        bits = go_tar.TYPE_BITS.get(info.type, 0)
    xattrs = {key.removeprefix("SCHILY.xattr."): value for key, value in info.pax_headers.items()}
    return go_tar.header(
        info.name + ("/" if info.isdir() else ""),
        info.type,
        info.mode | bits,
        info.uid,
        info.gid,
        info.size,
        int(info.mtime),
        info.linkname,
        info.devmajor,
        info.devminor,
        xattrs,
    )


def layer_size(entries: list[Entry]) -> int:
    """The size of the tar layer_chunks writes, known before it is written (the load's archive names it first)."""
    return _body_size(entries) + len(go_tar.END)


def _body_size(entries: list[Entry]) -> int:
    return sum(len(entry.header) + entry.info.size + -entry.info.size % tarfile.BLOCKSIZE for entry in entries)


def skeleton(entries: list[Entry]) -> list[bytes | int]:
    """The canonical tar of entries as its bytes between files and each file's size (overlay's
    StoredHeaders.skeleton): equal to a stored layer's, the tar is that layer's."""
    pieces: list[bytes | int] = []
    for entry in entries:
        pieces.append(entry.header)
        if entry.opener is not None and entry.info.size:
            pieces += [entry.info.size, tarfile.NUL * (-entry.info.size % tarfile.BLOCKSIZE)]
    return joined_pieces([*pieces, go_tar.END])


def layer_chunks(entries: list[Entry], epoch: int) -> Iterator[bytes]:
    """The canonical tar of entries, byte for byte as Docker's archiver writes it (go_tar), each file's
    data read from its opener as it is written; ValueError when a file is not the size its entry says."""
    for entry in entries:
        yield entry.header
        if entry.opener is None or not entry.info.size:
            continue
        with entry.opener() as data:
            if entry.info.name.endswith(".pyc"):
                body = _pyc(data.read(entry.info.size), epoch)
                if len(body) != entry.info.size:
                    raise ValueError(f"{entry.info.name} is shorter than its entry says")
                yield body
            else:
                yield from sized_chunks(data, entry.info.size, entry.info.name)
        yield tarfile.NUL * (-entry.info.size % tarfile.BLOCKSIZE)
    yield go_tar.END


def _bytes_opener(body: bytes) -> Opener:
    return lambda: contextlib.nullcontext(io.BytesIO(body))


def _relink(entries: dict[str, tuple[tarfile.TarInfo, Opener | None]], left_out: set[str]) -> None:
    """Each set of hard links written as its first kept name (in walk order) holding the data and the
    other kept names linking to it, whichever name the layer wrote first; a set with no kept name
    left out whole."""
    groups: dict[str, list[str]] = {}
    for name, (info, _) in entries.items():
        if info.islnk() and info.linkname in entries:
            groups.setdefault(info.linkname, [info.linkname]).append(name)
    for target, names in groups.items():
        kept = sorted((name for name in names if name not in left_out), key=walk_order)
        left_out.update(names)
        if not kept:
            continue
        info, opener = entries[target]
        for index, name in enumerate(kept):
            linked = copy.copy(info)
            linked.name = name
            if index:
                linked.type, linked.linkname, linked.size = tarfile.LNKTYPE, kept[0], 0
            entries[name] = (linked, opener if not index else None)
            left_out.discard(name)


def _is_whiteout(name: str) -> bool:
    return posixpath.basename(name).startswith(WHITEOUT_PREFIX)


def _clean(member: tarfile.TarInfo, name: str, epoch: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    if _is_whiteout(name):
        # A marker: what Docker's archiver gives it (a shared whiteout inode's link, its time, its
        # mode) says nothing about the image.
        info.type, info.mode, info.mtime = tarfile.REGTYPE, 0o600, epoch
        return info
    # A sparse file's data comes expanded: it is written as a regular file, as any other kind of one.
    info.type = tarfile.REGTYPE if member.isreg() else member.type
    info.mode, info.uid, info.gid = member.mode & 0o7777, member.uid, member.gid
    info.linkname, info.devmajor, info.devminor = (
        member.linkname.removeprefix("./") if member.islnk() else member.linkname,
        member.devmajor,
        member.devminor,
    )
    info.mtime = min(int(member.mtime), epoch)
    info.size = member.size if member.isfile() else 0
    # Extended attributes (file capabilities) are content; pax times and owner names are not.
    info.pax_headers = {k: v for k, v in member.pax_headers.items() if k.startswith("SCHILY.xattr.")}
    return info


def _config(config: dict[str, Any], diff_ids: list[str], epoch: int, folded: frozenset[int] = frozenset()) -> bytes:
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
    groups = fold_groups([_headers(file) for file in files]) if fold else [[n] for n in range(len(files))]
    diff_ids, paths = built[: own.start], unpacked.paths[: own.start]
    sent: list[Sent] = []
    changed: list[str] = []
    for group in groups:
        path = _sent_path(unpacked.paths, built, own, group)
        rewritten = files[group[-1]].with_suffix(f".normal-{len(paths)}")
        with contextlib.ExitStack() as open_files, rewritten.open("wb") as out:
            layers = []
            for n in group:  # each layer's data spooled until it is written (a folded one with the others)
                spool = open_files.enter_context(tempfile.TemporaryFile(dir=scratch))
                with files[n].open("rb") as layer:
                    layers.append(list(_spooled(layer, spool)))
            diff_ids.append(write_layer(_members(layers), out, epoch, changed))
        chunks = functools.partial(_chunks, rewritten)
        sent.append(Sent(path, len(paths), rewritten.stat().st_size, chunks, tuple(built[own[n]] for n in group)))
        paths.append(path)
    return Normalised(config, diff_ids, paths, sent, epoch, changed, folded=_folded(own, groups))


def _headers(layer: Path) -> list[Member]:
    with tarfile.open(layer, "r:") as tar:
        return [(member, None) for member in tar]


def _sent_path(paths: list[str], built: list[str], own: range, group: list[int]) -> str:
    """A sent layer's path in the load's manifest: its own when it is one layer; named by the layers
    folded into it otherwise (the same layer may also be sent alone, or in another fold)."""
    if len(group) == 1:
        return paths[own[group[0]]]
    return f"{hashlib.sha256(' '.join(built[own[n]] for n in group).encode()).hexdigest()}/layer.tar"


def fold_groups(layers: list[list[Member]]) -> list[list[int]]:
    """Own layers (by position) grouped into the layers sent: each run of small layers one, each layer
    of FOLD_BELOW bytes of file data or more alone."""
    groups: list[list[int]] = []
    small_before = False
    for position, members in enumerate(layers):
        # What is written of it: not what normalising leaves out (its size may differ between builds).
        kept = (member for member, _ in members if member.isfile() and not _left_out(member.name))
        small = sum(member.size for member in kept) < FOLD_BELOW
        if small and small_before:
            groups[-1].append(position)
        else:
            groups.append([position])
        small_before = small
    return groups


def _members(layers: list[list[Member]]) -> list[Member]:
    return folded(layers) if len(layers) > 1 else layers[0]


def _left_out(name: str) -> bool:
    name = name.removeprefix("./")
    return bool(DROPPED.match(name)) or _is_whiteout(name)


def _folded(own: range, groups: list[list[int]]) -> frozenset[int]:
    """The built layers folded into the one above (each group's but its top)."""
    return frozenset(own[n] for group in groups for n in group[:-1])


def folded(layers: list[list[Member]]) -> list[Member]:
    """Layers (bottom first) as the one layer that gives the same files applied over what lies below
    them: a later entry replaces an earlier one (a directory's children go with it when it is
    replaced by a file); a whiteout removes what the layers before it added, and stays (what it hides
    may lie below them); a directory made again where one was removed or replaced gets an opaque
    marker (what lies below stays hidden); a hard link whose file a later layer replaced or removed is
    written as a file with the data it had."""
    merged = _Tree()
    linked: dict[str, Member] = {}  # a hard link -> the file it named when it was made
    for members in layers:
        named = [(member.name.removeprefix("./"), member, opener) for member, opener in members]
        for name, _, _ in named:  # a layer's whiteouts are about the layers below it
            parent, base = posixpath.split(name)
            if base == OPAQUE:
                merged.drop_under(parent)
            elif base.startswith(WHITEOUT_PREFIX):
                merged.drop(posixpath.join(parent, base.removeprefix(WHITEOUT_PREFIX)))
        files = {name: (member, opener) for name, member, opener in named}
        for name, member, opener in named:
            if not posixpath.basename(name).startswith(WHITEOUT_PREFIX):
                _replace(merged, name, member)
                if member.islnk() and (target := files.get(member.linkname.removeprefix("./"))) is not None:
                    linked[name] = target
            merged.put(name, (member, opener))
    _unlinked(merged, linked)
    return list(merged.entries.values())


def _unlinked(merged: _Tree, linked: dict[str, Member]) -> None:
    """The hard links whose file a later layer replaced or removed, as that file with the data it had:
    the first of them (in walk order) holding it, the others linked to that one."""
    broken: dict[int, tuple[Member, list[str]]] = {}  # by the file they named
    for name, target in linked.items():
        link = merged.entries.get(name)
        if link is None or not link[0].islnk():  # the link itself was replaced or removed
            continue
        now = merged.entries.get(link[0].linkname.removeprefix("./"))
        if now is None or now[0] is not target[0]:
            broken.setdefault(id(target[0]), (target, []))[1].append(name)
    for (info, opener), names in broken.values():
        first, *others = sorted(names, key=walk_order)
        file = copy.copy(info)
        file.name = first
        merged.put(first, (file, opener))
        for name in others:
            again = copy.copy(info)
            again.name, again.type, again.linkname, again.size = name, tarfile.LNKTYPE, first, 0
            merged.put(name, (again, None))


def _replace(merged: _Tree, name: str, member: tarfile.TarInfo) -> None:
    """What an entry of a later layer takes the place of: a whiteout of its name, and what was under
    it unless it is a directory; a directory made where one was removed or replaced hides what lies
    below (an opaque marker)."""
    parent, base = posixpath.split(name)
    hidden = merged.pop(posixpath.join(parent, WHITEOUT_PREFIX + base)) is not None
    before = merged.entries.get(name)
    if not member.isdir():
        merged.drop_under(name)
    elif hidden or (before is not None and not before[0].isdir()):
        marker = tarfile.TarInfo(posixpath.join(name, OPAQUE))
        merged.put(marker.name, (marker, None))


class _Tree:
    """Entries by name, and each directory's children (named or implied), so a subtree is dropped in
    the time its size takes, not the whole layer's."""

    def __init__(self) -> None:
        self.entries: dict[str, Member] = {}
        self.children: dict[str, set[str]] = {}

    def put(self, name: str, entry: Member) -> None:
        self.entries[name] = entry
        while name:
            parent = posixpath.dirname(name)
            known = self.children.setdefault(parent, set())
            if name in known:
                break
            known.add(name)
            name = parent

    def pop(self, name: str) -> Member | None:
        entry = self.entries.pop(name, None)
        if entry is not None and not self.children.get(name):
            self.children.get(posixpath.dirname(name), set()).discard(name)
        return entry

    def drop(self, name: str) -> None:
        self.drop_under(name)
        self.pop(name)

    def drop_under(self, directory: str) -> None:
        below = list(self.children.pop(directory, ()))
        while below:
            name = below.pop()
            self.entries.pop(name, None)
            below.extend(self.children.pop(name, ()))


def inherited(diff_ids: list[str], parent_layers: frozenset[str]) -> int:
    """How many of an image's bottom layers are its parent's (the image it was built FROM), when
    which parent that is is not known (a base on a pinned image): those up to the first its parents
    lack. Every layer above is the stage's own, even one with the same bytes as a parent's (an empty
    layer, a step that changed nothing)."""
    return next((index for index, diff_id in enumerate(diff_ids) if diff_id not in parent_layers), len(diff_ids))


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
        stored = [_stored(image.layers[index]) for index in own]
        layers = [members for members, _ in stored]
        groups = fold_groups(layers) if fold else [[n] for n in range(len(layers))]
        for group in groups:
            before = len(changed)
            entries = canonical_entries(_members([layers[n] for n in group]), epoch, changed)
            links += [entry.info.name for entry in entries if entry.info.issym()]
            chunks = functools.partial(layer_chunks, entries, epoch)
            path = _sent_path(paths, built, own, group)
            # Nothing left out or changed, and the same bytes between the same files: it is the built layer.
            canonical = len(group) == 1 and len(changed) == before and skeleton(entries) == stored[group[0]][1]
            size, from_layers = layer_size(entries), tuple(built[own[n]] for n in group)
            sent.append(Sent(path, len(diff_ids), size, chunks, from_layers, canonical))
            diff_ids.append("")  # known once it was sent
            sent_paths.append(path)
    except (OSError, ValueError, EOFError, tarfile.TarError):
        return None  # a file gone or unreadable, or a store this code does not read as Docker does
    unchecked = [image.layers[index] for index in own]
    return Normalised(config, diff_ids, sent_paths, sent, epoch, changed, unchecked, links, _folded(own, groups))


def _stored(layer: StoredLayer) -> tuple[list[Member], list[bytes | int]]:
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
