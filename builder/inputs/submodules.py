"""Submodules of a git source, resolved at lock time: each one's path, URL and pinned commit, recursively."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from builder.inputs import git
from builder.inputs.site import SiteConfig
from builder.store.cache import Cache
from builder.store.http import redact

MAX_DEPTH = 8  # submodules of submodules: deeper than this is a loop or a mistake
# TileLang/tvm's tree, the largest a shipped stack has, holds about 15: a repository claiming
# more is made to exhaust the lock (3 gitlinks over 7 levels were 3,280 entries and 8,763 git calls).
MAX_SUBMODULES = 200
# Where a served repository's submodules may be: a server (scp-like user@host:path included), as
# joined with the parent's URL; anything else git would read as a path on this host.
_REMOTE = re.compile(r"^(https?|ssh|git)://[^/]|^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/]")


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
    entries = git.gitmodules(repository, commit).values()
    return {entry["path"]: entry["url"] for entry in entries if "path" in entry and "url" in entry}


def gitlinks(repository: str, commit: str) -> dict[str, str]:
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
    url: str, fetch_url: str, commit: str, cache: Cache, site: SiteConfig, skip: Sequence[str] = ()
) -> tuple[Submodule, ...]:
    """The submodules of url at commit (fetched through fetch_url, the site-rewritten URL), recursively,
    but those whose path from the root is in skip (each must name one).

    Relative submodule URLs are read against url (or fetch_url when url is a site:NAME)."""
    skipped: set[str] = set()
    found = _resolve(url, fetch_url, commit, cache, site, _Skip(frozenset(skip), skipped))
    if unknown := sorted(set(skip) - skipped):
        raise git.SourceError(f"skip_submodules: {', '.join(unknown)} is not a submodule of {url} at {commit[:12]}")
    return found


@dataclass(frozen=True)
class _Skip:
    paths: frozenset[str]
    seen: set[str]
    prefix: str = ""
    depth: int = 0
    count: list[int] = field(default_factory=lambda: [0])  # submodules resolved so far, in the whole tree

    def under(self, path: str) -> _Skip:
        return _Skip(self.paths, self.seen, f"{self.prefix}{path}/", self.depth + 1, self.count)

    def wants(self, path: str) -> bool:
        if f"{self.prefix}{path}" in self.paths:
            self.seen.add(f"{self.prefix}{path}")
            return False
        return True


def _resolve(
    url: str, fetch_url: str, commit: str, cache: Cache, site: SiteConfig, skip: _Skip
) -> tuple[Submodule, ...]:
    if skip.depth > MAX_DEPTH:
        raise git.SourceError(f"submodules nested more than {MAX_DEPTH} deep under {url}")
    try:
        mirror = str(git.mirror(fetch_url, commit, cache, site.skipped_checks(url)))
    except git.SourceError as err:
        if not skip.depth:
            raise
        # An unreachable host stays an outage (lock --check exits 3 for it), a missing commit does not.
        kind = git.SourceUnreachable if isinstance(err, git.SourceUnreachable) else git.SourceError
        raise kind(
            f"submodule {skip.prefix.rstrip('/')} ({redact(url)}) at {commit[:12]}: cannot be fetched from "
            f"{redact(fetch_url)}: {_reason(str(err))} (a mirror needs that commit: update it with `git fetch`, "
            "or list the path in skip_submodules if the build does not use it)"
        ) from err
    links = {path: sub for path, sub in gitlinks(mirror, commit).items() if skip.wants(path)}
    if not links:
        return ()
    declared = _declared(mirror, commit)
    found = []
    skip.count[0] += len(links)
    if skip.count[0] > MAX_SUBMODULES:
        raise git.SourceError(
            f"{redact(url)}: more than {MAX_SUBMODULES} submodules in its tree (at {skip.prefix or 'the top'}): list "
            "the ones the build does not use in skip_submodules"
        )
    for path, sub_commit in sorted(links.items()):
        if path not in declared:
            raise git.SourceError(f"{redact(url)} at {commit}: submodule {path} has no url in .gitmodules")
        sub_url = join_url(fetch_url if url.startswith("site:") else url, declared[path])
        # A site:NAME parent is where the site configuration says: a file:// one is this host's own choice.
        local_parent = (fetch_url if url.startswith("site:") else url).startswith("file:")
        if not local_parent and not _REMOTE.match(sub_url):
            # A repository from a server must not point the lock at this host's own repositories.
            raise git.SourceError(
                f"{redact(url)} at {commit[:12]}: submodule {skip.prefix}{path} names {redact(declared[path])}, "
                "not a server's URL (a path on this host?): only a file:// repository may have file:// submodules"
            )
        git.checked_commit(sub_commit, f"submodule {skip.prefix}{path}")
        sub_fetch = site.rewrite(sub_url)
        nested = _resolve(sub_url, sub_fetch, sub_commit, cache, site, skip.under(path))
        found.append(Submodule(path, sub_url, sub_commit, nested))
    return tuple(found)
