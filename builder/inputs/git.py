"""Git, run as a subprocess: refs to commits, mirrors, and a commit's tree as a tar."""

from __future__ import annotations

import os
import re
import subprocess
import tarfile
from collections.abc import Sequence
from pathlib import Path

# The errors of any kind of source: git's module raises them, and the tests name them here.
from builder.model.errors import SourceError as SourceError
from builder.model.errors import SourceNoAnswer as SourceNoAnswer
from builder.model.errors import SourceUnreachable as SourceUnreachable
from builder.store.cache import Cache
from builder.store.http import redact, scrub

COMMIT = re.compile(r"^[0-9a-f]{40}\Z")
# What `git check-ref-format` refuses in a ref name (git-check-ref-format(1), rules 1-10), plus
# a component starting with '-': a name read from a repository never reaches git as an option.
_BAD_REF = re.compile(r"^$|^/|(^|/)[.-]|\.\.|[^\x21-\x7e]|[~^:?*\[\\]|@\{|//|/$|\.$|\.lock(/|$)|^@$")


class ObjectRefused(SourceError):
    """git's object checks (fsck) refused an object a fetch brought: a malformed or hostile tree."""


# How git and its HTTP transport (curl) say a host gave no answer.
_NO_ANSWER = re.compile(
    r"Could not resolve host|Could not resolve hostname|Failed to connect|Connection refused|Connection timed out|"
    r"unable to connect|Network is unreachable|Operation timed out|The requested URL returned error: 5\d\d"
)


def checked_commit(value: str, what: str) -> str:
    """value, if it is a full commit id (40 hex digits): anything else may be read as an option."""
    if not isinstance(value, str) or not COMMIT.match(value):
        raise SourceError(f"{what}: {str(value)[:60]!r} is not a commit (40 lowercase hex digits)")
    return value


def safe_tag_ref(ref: str) -> bool:
    """Whether ref is refs/tags/<name> with a name git accepts and no component starting with '-'."""
    return ref.startswith("refs/tags/") and not _BAD_REF.search(ref.removeprefix("refs/tags/"))


# A source tree's own repository configuration must not run anything: no fsmonitor command,
# no hooks, and only the transports stackbuild uses (no ext::, no fd::).
SAFE_CONFIG = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "protocol.allow=never",
    *(arg for proto in ("file", "git", "http", "https", "ssh") for arg in ("-c", f"protocol.{proto}.allow=always")),
)


# git's object checks (fsck) on every fetch into a mirror: a tree with duplicate entries, `..` or
# `.git` components or another malformed object is refused as it arrives, before anything reads it
# (a symlink and a directory of one name let `git archive` write through the link: issue 48).
OBJECT_CHECKS = ("-c", "transfer.fsckObjects=true")
# An fsck message id as git names them (duplicateEntries, missingSpaceBeforeDate, ...).
FSCK_MESSAGE = re.compile(r"^[a-z][A-Za-z]{2,63}\Z")
# How fetch ("error: object <id>: ...") and fsck ("error in tree <id>: ...") say which object failed which check.
_REFUSED = re.compile(r"^error(?: in [a-z]+|: object) ([0-9a-f]{40}): ([A-Za-z]+): (.*)$", re.MULTILINE)
# Set in a store whose every object was checked (as it arrived, or once, for a store an earlier
# stackbuild fetched without checks).
CHECKED_MARK = "stackbuild.objectsChecked"


def git(*args: str, cwd: Path | None = None, timeout: float = 120, stdin: str | None = None) -> str:
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="true", LC_ALL="C", GIT_PROTOCOL_FROM_USER="0")
    try:
        command = ["git", *SAFE_CONFIG, *args]
        # surrogateescape: a ref or path that is not UTF-8 (a hostile server's) is carried, not a crash.
        run = subprocess.run(
            command,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            errors="surrogateescape",
            timeout=timeout,
            input=stdin,
        )
    except FileNotFoundError as err:
        raise SourceError("git is not installed (run `python -m builder.hostsetup`)") from err
    except subprocess.TimeoutExpired as err:
        raise SourceError(f"git {args[0]} timed out after {timeout:.0f}s") from err
    if run.returncode != 0:
        if refused := _REFUSED.search(run.stderr):
            sha, message, text = refused.groups()
            raise ObjectRefused(
                f"git's object check refused {sha[:12]}: {message}: {scrub(text)} (fsck_skip in the site "
                f"configuration lets {message} through for this repository, if it is known to be harmless)"
            )
        last = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else f"git {args[0]} failed"
        raise SourceError(scrub(last))
    return run.stdout


def resolve_ref(url: str, ref: str) -> str:
    """The commit a branch or tag points at (git ls-remote; any transport git speaks)."""
    if COMMIT.match(ref):
        return ref
    try:
        out = git("ls-remote", "--", url, ref, f"refs/heads/{ref}", f"refs/tags/{ref}", f"refs/tags/{ref}^{{}}")
    except SourceError as err:
        unreachable = SourceNoAnswer if _NO_ANSWER.search(str(err)) else SourceUnreachable
        raise unreachable(f"{redact(url)}: cannot list refs: {err}") from err
    refs: dict[str, str] = {}
    for line in out.splitlines():
        commit, _, name = line.partition("\t")
        refs[name] = commit
    for name in (f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}", f"refs/heads/{ref}", ref):
        if name in refs:
            return refs[name]
    raise SourceError(f"{redact(url)}: no branch or tag named '{ref}'{_existing_refs(url)}")


def fetchable(url: str, commit: str, cache: Cache) -> bool:
    """Whether the repository at url still serves commit (a branch that moved still has its old commit;
    a force-push or a deleted branch may not): the commit alone fetched into a scratch store, without
    its tree where the server filters (`--filter=tree:0`), and thrown away. A repository that does not
    answer at all raises SourceUnreachable; any other failure is git's own error."""
    checked_commit(commit, redact(url))
    with cache.scratch.temp_dir() as tmp:
        git("init", "--quiet", "--bare", "--", str(tmp / "probe.git"))
        fetch = ["-C", str(tmp / "probe.git"), "fetch", "--quiet", "--no-tags", "--depth", "1", "--filter=tree:0"]
        try:
            git(*fetch, "--", url, commit, timeout=1800)
        except SourceError as err:
            if _NOT_SERVED.search(str(err)):
                return False
            try:
                git("ls-remote", "--", url, "HEAD")
            except SourceError as listing:
                raise SourceUnreachable(f"{redact(url)}: cannot list refs: {listing}") from listing
            raise
    return True


# How git servers say they do not serve a commit asked for by id (upload-pack's words; GitHub's and
# gitcode's are git's own).
_NOT_SERVED = re.compile(r"not our ref|couldn't find remote ref|no such remote ref|unadvertised object")


def _existing_refs(url: str, shown: int = 12) -> str:
    """What the repository does have, for the error that it lacks a ref (default branch first)."""
    try:
        out = git("ls-remote", "--symref", "--", url)
    except SourceError:
        return ""
    default = next(
        (line.split()[1].removeprefix("refs/heads/") for line in out.splitlines() if line.startswith("ref:")), None
    )
    branches = [n.removeprefix("refs/heads/") for n in _names(out) if n.startswith("refs/heads/")]
    tags = [n.removeprefix("refs/tags/") for n in _names(out) if n.startswith("refs/tags/") and not n.endswith("^{}")]
    if default in branches:
        branches.remove(default)
        branches.insert(0, f"{default} (default)")
    parts = []
    if branches:
        parts.append("branches: " + ", ".join(branches[:shown]) + (", ..." if len(branches) > shown else ""))
    if tags:
        parts.append(
            "tags: " + ", ".join(sorted(tags)[-shown:]) + (" (newest names last)" if len(tags) > shown else "")
        )
    return f" ({'; '.join(parts)})" if parts else ""


def _names(ls_remote: str) -> list[str]:
    return [line.partition("\t")[2] for line in ls_remote.splitlines() if "\t" in line and not line.startswith("ref:")]


def has_commit(repository: Path, commit: str) -> bool:
    try:
        git("-C", str(repository), "cat-file", "-e", f"{checked_commit(commit, str(repository))}^{{commit}}")
        return True
    except SourceError:
        return False


def _tags_at(url: str, commit: str) -> list[str]:
    """The tags of the remote that name commit (annotated ones through their peeled entry); a name git
    would refuse, or one that could pass for an option, is left out."""
    tags = []
    for line in git("ls-remote", "--tags", "--", url).splitlines():
        sha, _, ref = line.partition("\t")
        if sha == commit and safe_tag_ref(ref.removesuffix("^{}")):
            tags.append(ref.removesuffix("^{}"))
    return sorted(set(tags))


def tag_refs(repository: Path) -> set[str]:
    """Full names (refs/tags/...) of all of repository's tags."""
    return set(git("-C", str(repository), "for-each-ref", "--format=%(refname)", "refs/tags").splitlines())


def tags_pointing_at(repository: Path, commit: str) -> list[str]:
    """Full names (refs/tags/...) of repository's tags on commit, the unsafe ones left out."""
    listing = git("-C", str(repository), "for-each-ref", f"--points-at={commit}", "--format=%(refname)", "refs/tags")
    return [ref for ref in listing.splitlines() if safe_tag_ref(ref)]


def object_checks(skipped: Sequence[str] = (), command: str = "fetch") -> list[str]:
    """git's options for a fetch (or an fsck) with every object checked, but for the message ids in
    skipped (a site setting, for one repository: never all of them)."""
    for message in skipped:
        if not FSCK_MESSAGE.match(message):
            raise SourceError(f"{message[:60]!r} is not a git fsck message id (such as missingSpaceBeforeDate)")
    prefix = "fetch.fsck" if command == "fetch" else "fsck"
    return [*OBJECT_CHECKS, *(arg for message in skipped for arg in ("-c", f"{prefix}.{message}=ignore"))]


def _checked_store(path: Path, url: str, skipped: Sequence[str]) -> None:
    """Mark path's objects as checked, checking them first if an earlier stackbuild fetched them unchecked."""
    try:
        git("-C", str(path), "config", "--get", CHECKED_MARK)
        return
    except SourceError:  # not marked
        pass
    try:
        git(*object_checks(skipped, "fsck"), "-C", str(path), "fsck", "--no-dangling", "--no-progress", timeout=1800)
    except ObjectRefused as err:
        raise SourceError(f"{redact(url)}: the cache's copy: {err}") from None
    git("-C", str(path), "config", CHECKED_MARK, "true")


def mirror(url: str, commit: str, cache: Cache, skipped_checks: Sequence[str] = ()) -> Path:
    """The cache's object store for url, holding commit (depth 1) and the tags on it, fetched now if missing.

    Only the pinned commits are fetched, not every ref: a repository with years of history and
    hundreds of branches costs one commit's objects. Every object is checked as it arrives (but
    for the fsck message ids in skipped_checks)."""
    checked_commit(commit, redact(url))
    path = cache.git_mirror(url)
    with cache.locks.exclusive(f"git-{path.stem}"):
        if not path.is_dir():
            with cache.scratch.temp_dir() as tmp:  # an init cut short never looks like a store
                git("init", "--quiet", "--bare", "--", str(tmp / "store.git"))
                git("-C", str(tmp / "store.git"), "config", CHECKED_MARK, "true")  # no object yet, each checked
                path.parent.mkdir(parents=True, exist_ok=True)
                os.replace(tmp / "store.git", path)
        _checked_store(path, url, skipped_checks)
        if not has_commit(path, commit):
            checks = object_checks(skipped_checks)
            fetch = [*checks, "-C", str(path), "fetch", "--quiet", "--no-tags", "--depth", "1", "--", url]
            try:
                tags = _tags_at(url, commit)
            except SourceError as err:  # the repository does not answer at all: an outage, not a missing commit
                raise SourceUnreachable(f"{redact(url)}: cannot list refs: {err}") from err
            try:
                git(*fetch, commit, *(f"+{tag}:{tag}" for tag in tags), timeout=1800)
            except ObjectRefused as err:
                raise SourceError(f"{redact(url)} at {commit}: {err}") from None
    return path


def shallow_checkout(mirror_path: Path, url: str, commit: str, dest: Path) -> None:
    """dest: a repository holding commit alone (depth 1), checked out, with the tags on it; origin is url."""
    checked_commit(commit, redact(url))
    dest.mkdir(parents=True, exist_ok=True)
    git("init", "--quiet", "--", str(dest))
    git("-C", str(dest), "fetch", "--quiet", "--depth", "1", "--", f"file://{mirror_path}", commit, timeout=1800)
    git("-C", str(dest), "checkout", "--quiet", "--detach", commit, "--")
    for ref in tags_pointing_at(mirror_path, commit):
        git("-C", str(dest), "update-ref", "--", ref, commit)  # never `git tag <name>`: a name is no option
    git("-C", str(dest), "remote", "add", "origin", "--", url)


def gitmodules(repository: str, commit: str) -> dict[str, dict[str, str]]:
    """name -> {path, url, ...} from the commit's .gitmodules (empty without one)."""
    try:
        text = git("-C", repository, "show", f"{checked_commit(commit, repository)}:.gitmodules")
    except SourceError:
        return {}
    return parse_gitmodules(text)


def parse_gitmodules(text: str) -> dict[str, dict[str, str]]:
    """name -> {path, url} of a .gitmodules text, as git reads it, but for [include]: a repository's
    file must not read one of this host (`--no-includes`)."""
    names: dict[str, dict[str, str]] = {}
    listing = git("config", "--no-includes", "--file", "-", "--get-regexp", r"^submodule\..*\.(path|url)$", stdin=text)
    for line in listing.splitlines():
        key, _, value = line.partition(" ")
        name, _, field = key.removeprefix("submodule.").rpartition(".")
        names.setdefault(name, {})[field] = value
    return names


def skip_submodules(checkout: Path, commit: str, paths: set[str]) -> None:
    """Mark the submodules at paths update=none in the checkout of commit, as `git submodule init` would
    record them."""
    for name, entry in gitmodules(str(checkout), commit).items():
        if entry.get("path") in paths:
            git("-C", str(checkout), "config", "--", f"submodule.{name}.update", "none")


def add_commit_tree(tar: tarfile.TarFile, repository: Path, commit: str, prefix: str, cache: Cache) -> None:
    """Add the tree of commit (git archive) under prefix to tar."""
    with cache.scratch.temp_dir() as tmp:
        archive = tmp / "src.tar"
        git("-C", str(repository), "archive", f"--prefix={prefix}", "-o", str(archive), checked_commit(commit, prefix))
        with tarfile.open(archive) as src:
            for member in src.getmembers():
                tar.addfile(member, src.extractfile(member) if member.isfile() else None)
