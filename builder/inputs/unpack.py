"""Writing into a build context's directory without ever following a link: a tar's members, and
files linked in from the cache.

tarfile's extraction filters are not what keeps a member inside: they check a path with
os.path.realpath, which a long enough chain of links defeats (CVE-2025-4517), and a git tree may
hold a link and a directory of one name (duplicate entries), so a member can be meant to land
through a link the archive itself made. Here each directory on a member's path is opened under its
parent's descriptor with O_NOFOLLOW, so a link on the way is refused, never followed; links inside
a tree are written as links.
"""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

from builder.model.errors import StackbuildError

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _refused(name: str, why: str) -> StackbuildError:
    return StackbuildError(f"build context member {name!r} {why}: refused")


def _components(name: str) -> tuple[str, ...]:
    if name.startswith("/"):
        raise _refused(name, "is an absolute path")
    components = tuple(part for part in name.split("/") if part not in ("", "."))
    if ".." in components:
        raise _refused(name, "goes up a directory ('..')")
    if not components:
        raise _refused(name, "names no path")
    return components


@contextmanager
def _directory(root: int, components: Sequence[str], name: str) -> Iterator[int]:
    """A descriptor of the directory at components under root, each one made if missing (its mode
    settled once everything is written); a link or a file on the way is refused."""
    fd = os.dup(root)
    try:
        for component in components:
            with suppress(FileExistsError):
                os.mkdir(component, 0o700, dir_fd=fd)
            try:
                child = os.open(component, _DIRECTORY, dir_fd=fd)
            except OSError as err:  # ELOOP: a link; ENOTDIR: a file
                raise _refused(name, f"would be written through {component!r}, which is a link or a file") from err
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _clear(parent: int, leaf: str, name: str) -> None:
    """A file or link named again is replaced (a tar's last member of a name wins) by unlinking the
    name, not by writing through it; a directory named again as something else is refused."""
    try:
        mode = os.stat(leaf, dir_fd=parent, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        raise _refused(name, "names a directory written before it")
    os.unlink(leaf, dir_fd=parent)


def _new_file(parent: int, leaf: str, content: IO[bytes], mode: int, mtime_ns: int) -> None:
    with os.fdopen(os.open(leaf, _NEW_FILE, 0o600, dir_fd=parent), "wb") as out:
        shutil.copyfileobj(content, out)
        out.flush()  # before the time is set: a later write would move it
        os.fchmod(out.fileno(), mode)
        os.utime(out.fileno(), ns=(mtime_ns, mtime_ns))


def _new_directory(parent: int, leaf: str, name: str) -> None:
    try:
        os.mkdir(leaf, 0o700, dir_fd=parent)
    except FileExistsError:
        if not stat.S_ISDIR(os.stat(leaf, dir_fd=parent, follow_symlinks=False).st_mode):
            raise _refused(name, "is a directory over a link or file of the same name") from None


def _unwritable_kind(member: tarfile.TarInfo) -> str | None:
    if member.islnk():
        return f"is a hard link (to {member.linkname!r})"
    if member.ischr() or member.isblk():
        return "is a device node"
    if member.isfifo():
        return "is a FIFO"
    if not (member.isfile() or member.isdir() or member.issym()):
        return f"is of tar type {member.type!r}"
    return None


def _write_member(tar: tarfile.TarFile, member: tarfile.TarInfo, parent: int, leaf: str) -> None:
    if member.isdir():
        _new_directory(parent, leaf, member.name)
        return
    _clear(parent, leaf, member.name)
    if member.issym():
        os.symlink(member.linkname, leaf, dir_fd=parent)
    else:
        content = tar.extractfile(member)
        assert content is not None  # a regular file's member has content
        _new_file(parent, leaf, content, stat.S_IMODE(member.mode), round(member.mtime * 1e9))


def unpack(archive: Path, directory: Path) -> set[Path]:
    """The members of archive written into directory, with their modes and times (a source's modes
    are what COPY gives the image; owners are not written: COPY gives root's, or --chown's); the
    directories it names. Refused, naming the member: an absolute or '..' path, one through a link,
    a hard link, a device node or FIFO."""
    named: dict[tuple[str, ...], tarfile.TarInfo] = {}
    root = os.open(directory, _DIRECTORY)
    try:
        with tarfile.open(archive) as tar:
            for member in tar:
                if why := _unwritable_kind(member):
                    raise _refused(member.name, why)
                components = _components(member.name)
                with _directory(root, components[:-1], member.name) as parent:
                    _write_member(tar, member, parent, components[-1])
                if member.isdir():
                    named[components] = member
        # Deepest first, once every file is in: a directory's time is not moved by a file written
        # into it, and a mode without write permission does not stop one.
        for components, member in sorted(named.items(), reverse=True):
            with _directory(root, components, member.name) as fd:
                os.fchmod(fd, stat.S_IMODE(member.mode))
                os.utime(fd, ns=(round(member.mtime * 1e9),) * 2)
    finally:
        os.close(root)
    return {directory.joinpath(*components) for components in named}


def link_file(source: Path, directory: Path, name: str) -> None:
    """source linked into directory as name (a copy, dated and moded as it, where a link is refused
    or crosses file systems), replacing a tree's file of that name: never written through, which
    would change source."""
    components = _components(name)
    root = os.open(directory, _DIRECTORY)
    try:
        with _directory(root, components[:-1], name) as parent:
            _clear(parent, components[-1], name)
            try:
                os.link(source, components[-1], dst_dir_fd=parent)
            except OSError:
                with source.open("rb") as content:
                    status = os.fstat(content.fileno())
                    _new_file(parent, components[-1], content, stat.S_IMODE(status.st_mode), status.st_mtime_ns)
    finally:
        os.close(root)
