"""An image's layers read from a local overlay2 engine's data root: what `docker save` would give
without the engine tarring the whole chain into a temporary directory and streaming it back.

A layer is its diff directory (found through the layer store's chain ids); its entries are the
ones Docker's own archiver writes for it (moby pkg/archive with the overlay whiteout format):
a character device 0:0 is a whiteout `.wh.<name>`, a directory marked opaque
(trusted.overlay.opaque=y) gets a `.wh..wh..opq` entry, the only extended attribute carried is
security.capability, sockets are left out, and a file with more than one link is written once
and linked to after. Only valid where Docker diffs overlay2 natively (`Native Overlay Diff: true`):
there the layer's tar was written from this same directory."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

WHITEOUT_PREFIX = ".wh."
OPAQUE_MARKER = ".wh..wh..opq"
OPAQUE_XATTR = "trusted.overlay.opaque"
CAPABILITY_XATTR = "security.capability"

TYPES = {
    stat.S_IFREG: tarfile.REGTYPE,
    stat.S_IFDIR: tarfile.DIRTYPE,
    stat.S_IFLNK: tarfile.SYMTYPE,
    stat.S_IFCHR: tarfile.CHRTYPE,
    stat.S_IFBLK: tarfile.BLKTYPE,
    stat.S_IFIFO: tarfile.FIFOTYPE,
}


@dataclass(frozen=True)
class LayerDirs:
    """An image as it sits in the engine's data root."""

    config: bytes  # the image config, byte for byte (its sha256 is the image id)
    dirs: list[Path]  # each layer's diff directory, bottom first


def image_layer_dirs(root: Path, image_id: str) -> LayerDirs | None:
    """image_id's config and layer directories under an overlay2 data root; None when they are not
    there (another machine's engine, or a store this process cannot read)."""
    digest = image_id.removeprefix("sha256:")
    try:
        config = (root / "image/overlay2/imagedb/content/sha256" / digest).read_bytes()
        if hashlib.sha256(config).hexdigest() != digest:
            return None
        dirs, chain = [], ""
        for diff_id in json.loads(config)["rootfs"]["diff_ids"]:
            # The layer store keys each layer by its chain id: the layers up to it, bottom first.
            chain = diff_id if not chain else f"sha256:{hashlib.sha256(f'{chain} {diff_id}'.encode()).hexdigest()}"
            layer = root / "image/overlay2/layerdb/sha256" / chain.removeprefix("sha256:")
            if (layer / "diff").read_text().strip() != diff_id:
                return None
            diff = root / "overlay2" / (layer / "cache-id").read_text().strip() / "diff"
            if not diff.is_dir():
                return None
            dirs.append(diff)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return LayerDirs(config, dirs)


def layer_entries(diff: Path) -> Iterator[tuple[tarfile.TarInfo, Path | None]]:
    """The entries of the layer whose diff directory is diff, each with the file holding its data
    (None when it has none), as Docker's archiver writes them."""
    seen: dict[tuple[int, int], str] = {}  # (device, inode) of a multiply linked file -> its first name
    for directory, subdirs, files in os.walk(diff):
        subdirs.sort()
        relative = os.path.relpath(directory, diff)
        prefix = "" if relative == "." else relative + "/"
        for name in sorted(subdirs + files):
            path = Path(directory, name)
            status = path.lstat()
            entry = _entry(prefix + name, path, status, seen)
            if entry is not None:
                yield entry
            if stat.S_ISDIR(status.st_mode) and _xattr(path, OPAQUE_XATTR) == b"y":
                yield _whiteout(f"{prefix}{name}/{OPAQUE_MARKER}"), None


def _entry(
    name: str, path: Path, status: os.stat_result, seen: dict[tuple[int, int], str]
) -> tuple[tarfile.TarInfo, Path | None] | None:
    kind = stat.S_IFMT(status.st_mode)
    if kind == stat.S_IFCHR and status.st_rdev == 0:
        head, _, base = name.rpartition("/")
        return _whiteout(f"{head}/{WHITEOUT_PREFIX}{base}" if head else WHITEOUT_PREFIX + base), None
    if kind not in TYPES:  # a socket: Docker leaves it out too
        return None
    info = tarfile.TarInfo(name)
    info.type = TYPES[kind]
    info.mode, info.uid, info.gid = stat.S_IMODE(status.st_mode), status.st_uid, status.st_gid
    info.mtime = status.st_mtime_ns // 1_000_000_000
    if kind in (stat.S_IFCHR, stat.S_IFBLK):
        info.devmajor, info.devminor = os.major(status.st_rdev), os.minor(status.st_rdev)
    if kind == stat.S_IFLNK:
        info.linkname = os.readlink(path)
    capability = _xattr(path, CAPABILITY_XATTR)
    if capability is not None:
        # As tarfile reads a pax record back: utf-8, undecodable bytes kept as surrogates.
        info.pax_headers = {f"SCHILY.xattr.{CAPABILITY_XATTR}": capability.decode("utf-8", "surrogateescape")}
    if kind != stat.S_IFDIR and status.st_nlink > 1:
        first = seen.setdefault((status.st_dev, status.st_ino), name)
        if first != name:
            info.type, info.linkname = tarfile.LNKTYPE, first
            return info, None
    if kind == stat.S_IFREG:
        info.size = status.st_size
        return info, path
    return info, None


def _whiteout(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode = tarfile.REGTYPE, 0o600
    return info


def _xattr(path: Path, key: str) -> bytes | None:
    try:
        return os.getxattr(path, key, follow_symlinks=False)
    except OSError:  # not set, or not supported where it lives
        return None
