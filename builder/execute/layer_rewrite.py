"""Rewriting one layer as Docker's archiver writes a tar (go_tar: its walk order, its headers), so the
same files give the same bytes: mtimes clamped to the lock's source date, owners by number (root by
name: CANN runs as HwHiAiUser), timestamp .pyc headers clamped like their sources (so Python still
finds them fresh), the last-change days in /etc/shadow clamped, and what only records when and where a
build ran (ld.so's aux-cache, apt lists and caches, logs) left out; hard links written as their first
name in walk order, whiteouts as bare markers. A layer whose files are canonical as built is thereby
its own rewrite: its skeleton is the stored layer's."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import posixpath
import re
import tarfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO

from builder.engine.overlay import joined_pieces, sized_chunks
from builder.execute import go_tar
from builder.execute.layer_read import Member, Opener

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
PYC_TIMESTAMP_FLAGS = b"\0\0\0\0"  # PEP 552: flags 0 is a timestamp .pyc (mtime at 8:12, size at 12:16)
SECONDS_PER_DAY = 86400
TAR_ENCODING = tarfile.ENCODING  # what tarfile writes names in (the file system's encoding)


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
        if DROPPED.match(name) and not member.isdir() and not is_whiteout(name):
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
    if is_whiteout(info.name):
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


def is_whiteout(name: str) -> bool:
    return posixpath.basename(name).startswith(WHITEOUT_PREFIX)


def _clean(member: tarfile.TarInfo, name: str, epoch: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    if is_whiteout(name):
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
