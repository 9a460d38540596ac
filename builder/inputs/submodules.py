"""Submodules of a git source, resolved at lock time: each one's path, URL and pinned commit, recursively."""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from builder.inputs import git
from builder.store.cache import Cache

MAX_DEPTH = 8  # submodules of submodules: deeper than this is a loop or a mistake


@dataclass(frozen=True)
class Submodule:
    path: str
    url: str
    commit: str
    submodules: tuple[Submodule, ...] = ()


def join_url(parent: str, relative: str) -> str:
    """A submodule URL as git reads it: `../x.git` is relative to the parent repository's URL."""
    if not relative.startswith(("./", "../")):
        return relative
    parts = urlsplit(parent)
    path = posixpath.normpath(posixpath.join(parts.path.rstrip("/"), relative))
    return urlunsplit(parts._replace(path=path))


def _declared(repository: str, commit: str) -> dict[str, str]:
    """path -> url from the commit's .gitmodules (empty without one)."""
    try:
        text = git.git("-C", repository, "show", f"{commit}:.gitmodules")
    except git.SourceError:
        return {}
    names: dict[str, dict[str, str]] = {}
    listing = git.git("config", "--file", "-", "--get-regexp", r"^submodule\..*\.(path|url)$", stdin=text)
    for line in listing.splitlines():
        key, _, value = line.partition(" ")
        name, _, field = key.removeprefix("submodule.").rpartition(".")
        names.setdefault(name, {})[field] = value
    return {entry["path"]: entry["url"] for entry in names.values() if "path" in entry and "url" in entry}


def _gitlinks(repository: str, commit: str) -> dict[str, str]:
    """path -> commit of every submodule entry (mode 160000) in the commit's tree."""
    found = {}
    for line in git.git("-C", repository, "ls-tree", "-r", "-z", commit).split("\0"):
        meta, _, path = line.partition("\t")
        if meta.startswith("160000 commit "):
            found[path] = meta.split()[2]
    return found


def _reason(error: str) -> str:
    """git's own words for a failed fetch: its first fatal line."""
    lines = error.strip().splitlines()
    return next((line for line in lines if line.startswith("fatal:")), lines[-1] if lines else error)


def resolve(
    url: str, fetch_url: str, commit: str, cache: Cache, rewrite: Callable[[str], str], depth: int = 0
) -> tuple[Submodule, ...]:
    """The submodules of url at commit (fetched through fetch_url, the site-rewritten URL), recursively.

    Relative submodule URLs are read against url (or fetch_url when url is a site:NAME)."""
    if depth > MAX_DEPTH:
        raise git.SourceError(f"submodules nested more than {MAX_DEPTH} deep under {url}")
    mirror = str(git.mirror(fetch_url, commit, cache))
    links = _gitlinks(mirror, commit)
    if not links:
        return ()
    declared = _declared(mirror, commit)
    found = []
    for path, sub_commit in sorted(links.items()):
        if path not in declared:
            raise git.SourceError(f"{url} at {commit}: submodule {path} has no url in .gitmodules")
        sub_url = join_url(fetch_url if url.startswith("site:") else url, declared[path])
        sub_fetch = rewrite(sub_url)
        try:
            nested = resolve(sub_url, sub_fetch, sub_commit, cache, rewrite, depth + 1)
        except git.SourceError as err:
            if str(err).startswith("submodule "):
                raise
            raise git.SourceError(
                f"submodule {path} ({sub_url}) at {sub_commit[:12]}: cannot be fetched from {sub_fetch}: "
                f"{_reason(str(err))} (a mirror needs that commit: update it with `git fetch`)"
            ) from err
        found.append(Submodule(path, sub_url, sub_commit, nested))
    return tuple(found)
