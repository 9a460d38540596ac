"""Normalising a built stage image so the same inputs give the same bytes (the same image ID, and
the same registry digests): Docker 20.10 has no SOURCE_DATE_EPOCH, so the image is read out
(`docker save`), its own layers and its config rewritten, and loaded back.

In each layer the stage added: entries in path order, mtimes clamped to the lock's source date,
owner names dropped (numeric uid/gid kept: CANN runs as HwHiAiUser), timestamp .pyc headers
clamped like their sources (so Python still finds them fresh), the last-change days in
/etc/shadow clamped, and what only records when and where a build ran (ld.so's aux-cache, apt
lists and caches, logs) left out. In the config: every date is the source date, and what names
the build rather than the image (BuildKit's buildinfo, the classic builder's container) is dropped.
The parents' layers were normalised when they were built: they are neither rewritten nor sent back
(the engine has them, and a load skips layers it has)."""

from __future__ import annotations

import datetime
import hashlib
import io
import json
import posixpath
import re
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from builder.store.files import sha256_file

# Files that only record a build's time or machine; a stage that writes them leaves the parent's.
# /tmp goes too: a stage hands its children files through its image's tree, never /tmp.
DROPPED = re.compile(
    r"^(var/cache/ldconfig/aux-cache|var/lib/apt/lists/.+|var/cache/apt/.+\.bin|var/cache/debconf/.+-old"
    r"|var/log/.+\.log|var/log/apt/.+|var/log/journal/.+|etc/(passwd|group|shadow|gshadow|subuid|subgid)-"
    r"|root/\.cache/.+|tmp/.+"
    r"|.+/CMakeFiles/(CMakeOutput\.log|CMakeError\.log|CMakeConfigureLog\.yaml))$"
)
PYC_TIMESTAMP_FLAGS = b"\0\0\0\0"  # PEP 552: flags 0 is a timestamp .pyc (mtime at 8:12, size at 12:16)
SECONDS_PER_DAY = 86400
# Config keys that name the build, not the image.
BUILD_ONLY = ("moby.buildkit.buildinfo.v1", "container", "container_config", "docker_version")


@dataclass(frozen=True)
class Normalised:
    config: bytes  # the image config as loaded: its sha256 is the image ID
    archive: Path  # what `docker load` takes: the config, the manifest and the rewritten layers

    @property
    def image_id(self) -> str:
        return f"sha256:{hashlib.sha256(self.config).hexdigest()}"


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


def _content(name: str, data: bytes, epoch: int) -> bytes:
    if name.endswith(".pyc"):
        return _pyc(data, epoch)
    if name == "etc/shadow":
        return _shadow(data, epoch)
    return data


def normalise_layer(layer: IO[bytes], out: IO[bytes], epoch: int, scratch: Path | None = None) -> None:
    """A layer tar rewritten into out (see the module's notes). File data waits in a spool file (in
    scratch), not in memory, until the entries are written in order."""
    # (entry, where its data starts in the spool, whether it is left out)
    entries: list[tuple[tarfile.TarInfo, int, bool]] = []
    with tempfile.TemporaryFile(dir=scratch) as spool:
        with tarfile.open(fileobj=layer, mode="r|") as tar:
            for member in tar:
                name = member.name.removeprefix("./")
                offset = spool.tell()
                handle = tar.extractfile(member) if member.isfile() else None
                if handle is not None and (name.endswith(".pyc") or name == "etc/shadow"):
                    spool.write(_content(name, handle.read(), epoch))
                elif handle is not None:
                    shutil.copyfileobj(handle, spool, 1 << 20)
                left_out = bool(DROPPED.match(name)) and not member.isdir() and ".wh." not in name
                entries.append((_clean(member, name, epoch, spool.tell() - offset), offset, left_out))
        # A file left out stays when a kept hard link names it: the link needs its target.
        linked = {info.linkname.removeprefix("./") for info, _, left_out in entries if info.islnk() and not left_out}
        kept = [(info, offset) for info, offset, left_out in entries if not left_out or info.name in linked]
        with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as written:
            # In path order, hard links after the files they name (a link needs its target extracted).
            for info, offset in sorted(kept, key=lambda entry: (entry[0].islnk(), entry[0].name)):
                spool.seek(offset)
                written.addfile(info, spool if info.isfile() else None)


def _clean(member: tarfile.TarInfo, name: str, epoch: int, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    # A sparse file's data comes expanded: it is written as a regular file.
    info.type = tarfile.REGTYPE if member.type == tarfile.GNUTYPE_SPARSE else member.type
    info.mode, info.uid, info.gid = member.mode, member.uid, member.gid
    info.linkname, info.devmajor, info.devminor = (
        member.linkname.removeprefix("./") if member.islnk() else member.linkname,
        member.devmajor,
        member.devminor,
    )
    info.mtime = min(int(member.mtime), epoch)
    info.size = size if member.isfile() else 0
    # Extended attributes (file capabilities) are content; pax times and owner names are not.
    info.pax_headers = {k: v for k, v in member.pax_headers.items() if k.startswith("SCHILY.xattr.")}
    return info


def _config(config: dict[str, Any], diff_ids: list[str], epoch: int) -> bytes:
    created = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    kept = {k: v for k, v in config.items() if k not in BUILD_ONLY}
    if isinstance(kept.get("config"), dict) and kept["config"].get("Image"):
        # The classic builder names the previous step's image, whose id holds that step's time.
        kept["config"] = {**kept["config"], "Image": ""}
    kept["created"] = created
    kept["history"] = [{**entry, "created": created} for entry in config.get("history", [])]
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


def normalise(saved: IO[bytes], parent_layers: frozenset[str], epoch: int, scratch: Path) -> Normalised:
    """A `docker save` stream of one image, normalised: the layers its parents have (by diff id) as
    they are, the others rewritten. scratch: a directory for the layers on their way."""
    layers: dict[str, Path] = {}  # the saved layer path -> the file sent back, above the first rewritten
    unpacked = unpack(saved, scratch)
    pending, config = unpacked.files, unpacked.config
    diff_ids: list[str] = list(config["rootfs"]["diff_ids"])
    for index, path in enumerate(unpacked.paths):
        if diff_ids[index] in parent_layers:
            # As it is; sent back only above a rewritten layer (the engine has it on another chain only).
            if layers:
                layers[path] = pending[path]
            continue
        rewritten = pending[path].with_suffix(".normal")
        with pending[path].open("rb") as layer, rewritten.open("wb") as out:
            normalise_layer(layer, out, epoch, scratch)
        diff_ids[index] = f"sha256:{sha256_file(rewritten)}"
        layers[path] = rewritten
    body = _config(config, diff_ids, epoch)
    return Normalised(body, _archive(body, unpacked.paths, layers, scratch))


def _archive(config: bytes, paths: list[str], rewritten: dict[str, Path], scratch: Path) -> Path:
    """What `docker load` reads: the layers it lacks at their paths, the config, the manifest."""
    digest = hashlib.sha256(config).hexdigest()
    manifest = [{"Config": f"{digest}.json", "RepoTags": None, "Layers": paths}]
    out = scratch / "load.tar"
    with tarfile.open(out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, file in rewritten.items():
            tar.add(file, arcname=path, recursive=False)
        for name, data in ((f"{digest}.json", config), ("manifest.json", json.dumps(manifest).encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out
