"""The Jinja2 environment the stages' Dockerfiles and scripts are rendered with: the templates
shipped in this package (templates/), values let in only through the json and sh filters, and
the compiled templates kept between runs in the user's own cache directory, loaded only from
files nobody else could have written."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import stat
from pathlib import Path

import jinja2
import jinja2.bccache


class _TemplateCache(jinja2.BytecodeCache):
    """Compiled templates in stackbuild's cache, read and written through its open directory.

    Loading one runs it, so a file is loaded only if nobody but this user (or root) could have
    written it: the directory is the user's and nobody else can write in it (_bytecode_cache), and
    the file is a regular file of the user's that nobody else can write. That costs an fstat a
    file; signing the files instead would need a key kept somewhere just as private. A full or
    read-only disk only costs compile time.
    """

    def __init__(self, directory: int, path: Path) -> None:
        self.directory = directory
        self.path = path

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            fd = os.open(_file_name(bucket), os.O_RDONLY | os.O_NOFOLLOW, dir_fd=self.directory)
        except OSError:
            return
        with os.fdopen(fd, "rb") as file:
            found = os.fstat(fd)
            if stat.S_ISREG(found.st_mode) and _private(found):
                bucket.load_bytecode(file)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        name = _file_name(bucket)
        part = f".{name}.{os.urandom(8).hex()}"
        with contextlib.suppress(OSError):
            fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=self.directory)
            try:
                with os.fdopen(fd, "wb") as file:
                    bucket.write_bytecode(file)
                os.replace(part, name, src_dir_fd=self.directory, dst_dir_fd=self.directory)
            except OSError:
                os.unlink(part, dir_fd=self.directory)
                raise


def _file_name(bucket: jinja2.bccache.Bucket) -> str:
    return f"__jinja2_{bucket.key}.cache"  # Jinja's own name: a cache from before this check is kept


def _private(found: os.stat_result) -> bool:
    """Owned by this user and writable by nobody else."""
    return found.st_uid == os.getuid() and not found.st_mode & 0o022


def _bytecode_cache(directory: Path) -> _TemplateCache | None:
    """The cache's jinja/ directory, if it is this user's own (none otherwise: templates are compiled).

    It is opened without following a link and checked on the open directory, so what is checked is
    what is used, and no link can make the closing below change another directory of the user's.
    """
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    with contextlib.suppress(OSError):
        found = os.fstat(fd)
        if found.st_uid == os.getuid():
            if not _private(found):
                _close_off(fd)
            return _TemplateCache(fd, directory)
    os.close(fd)
    return None


def _close_off(directory: int) -> None:
    """Make the user's directory private and empty it: an old cache made under umask 002 was
    writable by the group, so any file in it may have been put there by someone else."""
    os.fchmod(directory, 0o700)
    for name in os.listdir(directory):
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=directory)


templates = jinja2.Environment(
    loader=jinja2.PackageLoader("builder.plan", "templates"),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    autoescape=False,
    # Compiled templates are kept between runs once the command line says where (keep_compiled_templates):
    # every command would otherwise spend about 40 ms compiling them (1 ms to load; a no-op build takes 0.4 s).
)


def keep_compiled_templates(directory: Path) -> None:
    """Compiled templates kept in directory (the cache's jinja/) from now on, if it is this user's own."""
    current = templates.bytecode_cache
    if isinstance(current, _TemplateCache):
        if current.path == directory:
            return
        os.close(current.directory)
    templates.bytecode_cache = _bytecode_cache(directory)


# Values reach templates only through these: JSON (Dockerfile exec and COPY forms) and
# shell quoting (scripts), so no value can end an instruction or a command.
templates.filters["json"] = lambda value: json.dumps(value, ensure_ascii=False)
templates.filters["sh"] = lambda value: shlex.quote(str(value))
