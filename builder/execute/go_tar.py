"""A layer tar's entries written byte for byte as Docker's archiver writes them: Go's archive/tar
(writer.go: `writeUSTARHeader` when a USTAR header holds the entry, else `writePAXHeader`: an
extended header for what it cannot hold, then the header from `templateV7Plus`; moby's
pkg/archive truncates dates to the second and clears access and change times, so USTAR stays
allowed). So a layer whose files are canonical already (dated no later than the
source date, nothing to leave out) is, as the engine built it, the canonical layer: the same diff id,
and it need not be written or loaded again (`tests/docker/test_overlay.py` compares with the engine).

What it need not match Docker in it still writes one way, so the canonical bytes never depend on the
engine or the host, and a layer that differs from them there is rewritten: whiteouts and opaque
markers (their place, date, mode and links: a step cannot date them anyway), and owner names other
than root's (Docker 20.10 writes what its host names an id; Docker 23 and later write none)."""

from __future__ import annotations

import tarfile
from collections.abc import Mapping
from typing import NamedTuple

BLOCK = tarfile.BLOCKSIZE
END = bytes(2 * BLOCK)  # Go's Writer.Close: two zero blocks, no padding to a record
NAME, LINK, OWNER_NAME, PREFIX = 100, 100, 32, 155
PAX_DIRECTORY = "PaxHeaders.0"  # writePAXHeader: path.Join(dir, "PaxHeaders.0", file)
# The file type bits Go's FileInfoHeader (and moby's fillGo18FileTypeBits) put in a header's mode.
TYPE_BITS = {
    tarfile.REGTYPE: 0o100000,
    tarfile.SYMTYPE: 0o120000,
    tarfile.CHRTYPE: 0o020000,
    tarfile.BLKTYPE: 0o060000,
    tarfile.DIRTYPE: 0o040000,
    tarfile.FIFOTYPE: 0o010000,
}


def owner_name(owner: int) -> str:
    """The owner name the canonical tar writes: root's for id 0 (what every Linux host names it, so
    Docker's lookup gives it too), none for others (a host's names are not the image's)."""
    return "root" if owner == 0 else ""


def header(
    name: str,
    type_: bytes,
    mode: int,
    uid: int,
    gid: int,
    size: int,
    mtime: int,
    linkname: str = "",
    devmajor: int = 0,
    devminor: int = 0,
    xattrs: Mapping[str, str] = {},
) -> bytes:
    """One entry's header blocks as Go writes them: a USTAR header when it can hold the entry (a long
    name cut into its prefix field), else an extended header first (a long or non-ASCII name or link,
    a number too large for its octal field, a date before 1970, extended attributes). name: a
    directory's ends with "/"; mode: with its file type bits."""
    records: dict[str, bytes] = {f"SCHILY.xattr.{key}": _raw(value) for key, value in xattrs.items()}
    for key, text, width in (("path", name, NAME), ("linkpath", linkname, LINK)):
        if len(_raw(text)) > width or not text.isascii():
            records[key] = _raw(text)
    for key, number, width in (("uid", uid, 8), ("gid", gid, 8), ("size", size, 12)):
        if not _fits(number, width):
            records[key] = str(number).encode()
    if not _fits(mtime, 12):
        records["mtime"] = str(mtime).encode()
    prefix = b""
    if list(records) == ["path"] and (split := _ustar_split(records["path"])) is not None:
        prefix, name = split[0], split[1].decode()  # USTAR can hold it: Go prefers that to PAX
        del records["path"]
    out = b""
    if records:
        data = b"".join(_record(key.encode(), records[key]) for key in sorted(records, key=str.encode))
        # path.Split at the last "/" (a directory's name ends there: no file part), then path.Join.
        directory, _, file = name.rpartition("/")
        pax_name = "/".join(part for part in (directory.rstrip("/"), PAX_DIRECTORY, file) if part)
        out += _block(Fields(_ascii(pax_name)[:NAME].rstrip(b"/"), b"x", 0, 0, 0, len(data), 0, b""), b"", b"", None)
        out += data + bytes(-len(data) % BLOCK)
    fields = Fields(_ascii(name), type_, mode, uid, gid, size, mtime, _ascii(linkname))
    return out + _block(fields, _ascii(owner_name(uid)), _ascii(owner_name(gid)), (devmajor, devminor), prefix)


def _ustar_split(name: bytes) -> tuple[bytes, bytes] | None:
    """Go's splitUSTARPath: an ASCII name too long for the name field, cut at a "/" into a prefix of
    at most 155 bytes and a name of at most 100; None when it cannot be."""
    if len(name) <= NAME or not name.isascii():
        return None
    length = len(name)
    if length > PREFIX + 1:
        length = PREFIX + 1
    elif name[length - 1 : length] == b"/":
        length -= 1
    cut = name.rfind(b"/", 0, length)
    if cut <= 0 or not 0 < len(name) - cut - 1 <= NAME or cut > PREFIX:
        return None
    return name[:cut], name[cut + 1 :]


class Fields(NamedTuple):
    """A header's fields every kind of header has (V7's), as written."""

    name: bytes
    type_: bytes
    mode: int
    uid: int
    gid: int
    size: int
    mtime: int
    linkname: bytes


def _block(fields: Fields, uname: bytes, gname: bytes, devices: tuple[int, int] | None, prefix: bytes = b"") -> bytes:
    """templateV7Plus then SetFormat(FormatPAX); writeRawFile's extended header has no device fields."""
    block = bytearray(BLOCK)
    _string(block, 0, NAME, fields.name)
    _octal(block, 100, 8, fields.mode)
    _octal(block, 108, 8, fields.uid)
    _octal(block, 116, 8, fields.gid)
    _octal(block, 124, 12, fields.size)
    _octal(block, 136, 12, fields.mtime)
    block[156:157] = fields.type_
    _string(block, 157, LINK, fields.linkname)
    block[257:265] = b"ustar\x0000"
    _string(block, 265, OWNER_NAME, uname)
    _string(block, 297, OWNER_NAME, gname)
    if devices is not None:
        _octal(block, 329, 8, devices[0])
        _octal(block, 337, 8, devices[1])
    _string(block, 345, PREFIX, prefix)
    block[148:156] = b" " * 8  # the checksum is taken with its own field as spaces
    _octal(block, 148, 7, sum(block))
    return bytes(block)


def _string(block: bytearray, at: int, width: int, value: bytes) -> None:
    """Go's formatString: cut to the field (a cut that ends in "/" ends at the name before it)."""
    block[at : at + min(width, len(value))] = value[:width]
    if len(value) < width:
        block[at + len(value)] = 0
    elif len(value) > width and value[width - 1 : width] == b"/":
        end = len(value[: width - 1].rstrip(b"/"))
        block[at + end] = 0


def _octal(block: bytearray, at: int, width: int, number: int) -> None:
    """Go's formatOctal: zero-padded octal and a NUL; 0 for what does not fit (a PAX record holds it)."""
    _string(block, at, width, f"{number if _fits(number, width) else 0:0{width - 1}o}".encode())


def _fits(number: int, width: int) -> bool:
    return 0 <= number < 1 << (3 * (width - 1))


def _ascii(text: str) -> bytes:
    """Go's toASCII: the characters below 0x80, but NUL; the others left out."""
    return bytes(ord(char) for char in text if 0 < ord(char) < 0x80)


def _raw(text: str) -> bytes:
    return text.encode(tarfile.ENCODING, "surrogateescape")


def _record(key: bytes, value: bytes) -> bytes:
    """A PAX record, "<length> key=value\\n", its length counting itself."""
    size = len(key) + len(value) + 3
    size += len(str(size))
    record = b"%d %s=%s\n" % (size, key, value)
    return record if len(record) == size else b"%d %s=%s\n" % (len(record), key, value)
