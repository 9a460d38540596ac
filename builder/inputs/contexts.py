"""Build contexts: the directory a stage's Dockerfile is built from, and nothing else.

A plan says what goes in (ContextItem values); writing fetches what is not local yet, so a
stage's downloads happen when that stage starts. Files from the cache (installer packages, base
tarballs, .debs) are hard links to its blobs, not copies: the engine reads each once, from where
it was downloaded.
"""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from builder.inputs import git, submodules
from builder.inputs.trees import tree_files, tree_hash
from builder.inputs.unpack import link_file, unpack
from builder.model.errors import StackbuildError
from builder.store.cache import Cache
from builder.store.files import sha256_file


@dataclass(frozen=True)
class FileItem:
    """One file (a package, a base tarball), obtained when the context is written."""

    arcname: str
    obtain: Callable[[], Path]
    # The pinned file a bundle carries for it, when the context gets something made from it: a signed
    # zip (by sha256 in the cache), whose verified .run the context gets; "": the file itself.
    pinned_sha256: str = ""


@dataclass(frozen=True)
class LocalTree:
    """A local source tree (the files tree_files lists), under prefix; sha256 is its tree hash when planned."""

    prefix: str
    root: Path
    sha256: str = ""


@dataclass(frozen=True)
class GitTree:
    """The tree of a commit of a git repository (through the cache's mirror), under prefix, with its submodules'."""

    prefix: str
    url: str
    commit: str
    submodules: tuple[GitTree, ...] = ()
    keep_git: bool = False  # a checkout with .git instead of the files alone
    skipped_checks: tuple[str, ...] = ()  # git object checks the site lets through for it (SiteConfig.fsck_skip)


@dataclass(frozen=True)
class BytesItem:
    """A file the plan wrote (a build script), with its mode."""

    arcname: str
    data: bytes
    mode: int = 0o755


ContextItem = FileItem | LocalTree | GitTree | BytesItem


IMPLIED_DIRECTORY_MODE = 0o755


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    tar.addfile(info, io.BytesIO(data))


def _add_git_tree(tar: tarfile.TarFile, tree: GitTree, cache: Cache) -> None:
    if tree.keep_git:
        with cache.scratch.temp_dir() as tmp:
            _checkout(tree, tmp / "src", tree.prefix, cache)
            tar.add(tmp / "src", arcname=tree.prefix.rstrip("/"), filter=_whole(tmp / "src", tree.prefix.rstrip("/")))
        return
    store = git.mirror(tree.url, tree.commit, cache, tree.skipped_checks)
    git.add_commit_tree(tar, store, tree.commit, tree.prefix, cache)
    for sub in tree.submodules:
        _add_git_tree(tar, sub, cache)


def _checkout(tree: GitTree, dest: Path, root_prefix: str, cache: Cache) -> None:
    """A shallow checkout of tree at its commit, its tags and its submodules' (their git dirs absorbed)."""
    git.shallow_checkout(git.mirror(tree.url, tree.commit, cache, tree.skipped_checks), tree.url, tree.commit, dest)
    listed = {sub.prefix.removeprefix(tree.prefix).rstrip("/") for sub in tree.submodules}
    for sub in tree.submodules:
        _checkout(sub, dest / sub.prefix.removeprefix(tree.prefix).rstrip("/"), root_prefix, cache)
    # A skipped submodule: `git submodule update --init` in a build script leaves it alone.
    git.skip_submodules(dest, tree.commit, set(submodules.gitlinks(str(dest), tree.commit)) - listed)
    if tree.submodules:
        git.git("-C", str(dest), "submodule", "--quiet", "absorbgitdirs")


def write_context(directory: Path, dockerfile: str, items: Sequence[ContextItem], cache: Cache) -> None:
    """The context in directory (empty, on the cache's file system: see ScratchSpace.temp_dir): the
    Dockerfile, the trees and the plan's files written, then each file from the cache linked in
    (over a tree's file of the same name: never written through, which would change the blob)."""
    (directory / "Dockerfile").write_text(dockerfile)
    (directory / "Dockerfile").chmod(0o644)  # not this process's umask: nothing of a context depends on it
    with cache.scratch.temp_dir() as scratch:
        with tarfile.open(scratch / "trees.tar", mode="w") as tar:
            for item in items:
                match item:
                    case FileItem():
                        pass  # linked once the trees are written
                    case LocalTree(prefix, root, planned):
                        for rel in tree_files(root):
                            name = f"{prefix}{rel.as_posix()}"
                            tar.add(root / rel, arcname=name, recursive=False, filter=_whole(root / rel, name))
                        # The stage's key holds the planned hash: a tree edited since would be cached under it.
                        if planned and tree_hash(root) != planned:
                            raise StackbuildError(f"{root} changed while the build was running: run the build again")
                    case BytesItem(arcname, data, mode):
                        _add_bytes(tar, arcname, data, mode)
                    case GitTree():
                        _add_git_tree(tar, item, cache)
        given = unpack(scratch / "trees.tar", directory)
    for item in items:
        if isinstance(item, FileItem):
            link_file(_unchanged(item.obtain(), cache), directory, item.arcname)
    _settle_implied_directories(directory, given)


def _whole(source: Path, arcname: str) -> Callable[[tarfile.TarInfo], tarfile.TarInfo]:
    """tar.add's filter for source added as arcname: a file's second name (a hard link) is stored
    as a file of its own, as unpacking refuses hard links."""

    def whole(member: tarfile.TarInfo) -> tarfile.TarInfo:
        if not member.islnk():
            return member
        member.type, member.linkname = tarfile.REGTYPE, ""  # gettarinfo's own, made for this add alone
        member.size = (source / os.path.relpath(member.name, arcname)).lstat().st_size
        return member

    return whole


def _unchanged(path: Path, cache: Cache) -> Path:
    """path, checked again if it is a cache blob: linked into the context, a blob changed since it was
    checked (written through a link, edited) would be built from under a name it no longer holds."""
    if cache.holds_blob(path) and not cache.blob_intact(path):
        actual = sha256_file(path)
        raise StackbuildError(
            f"cached file {path} holds sha256 {actual}, not its name: remove it (`stackbuild gc --verify` "
            "removes every such file) and build again"
        )
    return path


def _settle_implied_directories(directory: Path, given: set[Path]) -> None:
    """A directory no tree names (a local tree carries its files only) is given the mode an engine
    gives the directories of a context tar, so COPY gives the same modes under any umask."""
    for path, _, _ in os.walk(directory):
        if Path(path) not in given:
            os.chmod(path, IMPLIED_DIRECTORY_MODE)
