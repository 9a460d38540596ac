"""Air-gap bundles: everything a stack's build needs in one directory, with a manifest of sha256s.

    bundle.json        what is in it: each file's sha256 and size, each git commit and where it is
    lock.json          the lockfile the bundle was made for
    blobs/<sha256>     toolkit packages, base tarballs, .debs, wheels (as the cache keeps them)
    git/<n>.git        a bare repository per git source holding its pinned commit (and its tags)

`vendor` gathers them through the same code a build uses (so what a build would fetch is fetched
now); `import_bundle` fills a cache from a bundle, checking every file's sha256 and every git
object, so a machine without outside access builds from it. Path sources travel with the project.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from builder.inputs import git
from builder.inputs.contexts import FileItem
from builder.inputs.site import SiteConfig
from builder.inputs.source_kinds import kind_of
from builder.lock.locked import SHA256, Lock
from builder.manifest.types import GitUrl
from builder.model.errors import InputError, StackbuildError
from builder.model.say import Say
from builder.plan.compile_cache import CompileCache
from builder.plan.plan_model import Plan
from builder.store.cache import Cache
from builder.store.files import CHUNK, sha256_file
from builder.store.http import redact

BUNDLE_FILE = "bundle.json"
BUNDLE_FORMAT = 1
MAX_MANIFEST = 64 << 20  # bundle.json lists files and commits: far below this


@dataclass(frozen=True)
class Imported:
    files: int
    bytes: int
    commits: int
    lock_sha256: str


def git_sources(lock: Lock, site: SiteConfig) -> Iterator[tuple[str, str, str]]:
    """(lock URL, fetch URL on this site, commit) of every repository a source carries (a git source
    and its submodules, recursively), as its kind names them."""
    for component in lock.components:
        for carried in kind_of(component.source).carried(component.source, site):
            yield carried.url, carried.fetch_url, carried.commit


def _store_name(url: str) -> str:
    return f"git/{hashlib.sha256(url.encode()).hexdigest()[:16]}.git"


def _copy_commit(source: Path, target: Path, commit: str, checked: Sequence[str] | None = None) -> list[str]:
    """commit (depth 1) and the tags on it from the bare repository source into target (made if
    missing); the tags on it that were not taken. checked: every object checked on the way in, but for
    these fsck message ids (the site's fsck_skip for the repository); None: the source is a mirror
    whose objects were checked as they arrived.

    A commit's tags enter a store only with the commit, as git.mirror fetches them: into a store
    that holds the commit already no tag is added (a bundle cannot give a pinned commit a new
    version for `git describe`), and a tag the store has is never moved (nor its v1.0 re-pointed)."""
    git.checked_commit(commit, str(source))
    offered = git.tags_pointing_at(source, commit)
    if not target.is_dir():
        git.git("init", "--quiet", "--bare", "--", str(target))
        git.git("-C", str(target), "config", git.CHECKED_MARK, "true")  # each object it gets is checked
    if git.has_commit(target, commit):
        kept = git.tags_pointing_at(target, commit)
        return [ref for ref in offered if ref not in kept]
    had = git.tag_refs(target)
    checks = git.object_checks(checked) if checked is not None else []
    fetch = [*checks, "-C", str(target), "fetch", "--quiet", "--no-tags", "--depth", "1", "--", f"file://{source}"]
    git.git(*fetch, commit, *(f"{ref}:{ref}" for ref in offered if ref not in had), timeout=1800)
    return [ref for ref in offered if ref in had]


def vendor(
    plans: Sequence[Plan], lock: Lock, lock_path: Path, site: SiteConfig, cache: Cache, out: Path, say: Say
) -> dict[str, Any]:
    """Write the bundle of lock (for the plans' architectures) to out; its manifest."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"-o {out}: exists and is not an empty directory: vendor writes a new one (pick another)")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    staging.chmod(0o755)
    try:
        manifest = _fill(staging, plans, lock, lock_path, site, cache, say)
        os.replace(staging, out)  # the bundle appears whole or not at all
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return manifest


def _fill(
    staging: Path, plans: Sequence[Plan], lock: Lock, lock_path: Path, site: SiteConfig, cache: Cache, say: Say
) -> dict[str, Any]:
    files: dict[str, dict[str, Any]] = {}
    for plan in plans:
        for stage in plan.order():
            for item in stage.context:
                if isinstance(item, FileItem):
                    obtained = item.obtain()  # a signed zip is fetched and verified here, before it is carried
                    carried = cache.blob(item.pinned_sha256) if item.pinned_sha256 else obtained
                    _add_blob(staging, files, carried, f"{plan.arch} {stage.name}: {item.arcname}")
            if isinstance(stage.compile_cache, CompileCache):  # the tool a build mounts, in no stage's context
                for deb in stage.compile_cache.tool:
                    _add_blob(staging, files, cache.blob(deb.sha256), f"{plan.arch} compile cache: {deb.file}")
    say(f"[stackbuild] vendor: {len(files)} files")
    commits = []
    for url, fetch_url, commit in git_sources(lock, site):
        name = _store_name(url)
        _copy_commit(git.mirror(fetch_url, commit, cache, site.skipped_checks(url)), staging / name, commit)
        commits.append({"url": url, "commit": commit, "path": name})
    say(f"[stackbuild] vendor: {len(commits)} git commits")
    shutil.copyfile(lock_path, staging / "lock.json")
    files["lock.json"] = {"sha256": sha256_file(staging / "lock.json"), "size": lock_path.stat().st_size}
    manifest = {
        "format": BUNDLE_FORMAT,
        "stack": lock.stack,
        "lock_sha256": lock.lock_sha256,
        "architectures": sorted(p.arch.value for p in plans),
        "files": dict(sorted(files.items())),
        "git": commits,
    }
    (staging / BUNDLE_FILE).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _add_blob(staging: Path, files: dict[str, dict[str, Any]], path: Path, what: str) -> None:
    sha256 = sha256_file(path)
    name = f"blobs/{sha256}"
    if name not in files:
        (staging / "blobs").mkdir(exist_ok=True)
        shutil.copyfile(path, staging / name)
        files[name] = {"sha256": sha256, "size": path.stat().st_size, "what": what}


class _Entry(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    sha256: str = Field(pattern=SHA256)
    size: int = Field(ge=0)


class _GitEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    url: GitUrl
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    path: str = Field(pattern=r"^git/[0-9a-f]{16}\.git$")


class _Manifest(BaseModel):
    """bundle.json as vendor writes it: nothing in it names a path outside the bundle."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    format: Literal[1]
    lock_sha256: str = Field(pattern=SHA256)
    files: dict[str, _Entry]
    git: list[_GitEntry]

    @field_validator("files")
    @classmethod
    def only_the_lock_and_blobs(cls, files: dict[str, _Entry]) -> dict[str, _Entry]:
        for name, entry in files.items():
            if name != "lock.json" and name != f"blobs/{entry.sha256}":
                raise ValueError(f"{name[:80]!r}: a bundle holds only lock.json and blobs/<its sha256>")
        if "lock.json" not in files:
            raise ValueError("lock.json is not listed")
        return files


def _read_manifest(bundle: Path) -> _Manifest:
    where = bundle / BUNDLE_FILE
    try:
        data = json.loads(_read_regular(where, MAX_MANIFEST))
    except (OSError, ValueError) as err:
        raise InputError(f"{where}: not a stackbuild bundle ({err}): make one with `stackbuild vendor`") from err
    if isinstance(data, dict) and data.get("format") != BUNDLE_FORMAT:
        raise InputError(f"{where}: format {data.get('format')!r}, this stackbuild reads {BUNDLE_FORMAT}")
    try:
        return _Manifest.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(part) for part in first["loc"])[:120] or "bundle"
        field = field if field.isprintable() else ascii(field)  # a key may hold a newline
        raise InputError(f"{where}: {field}: {first['msg'].removeprefix('Value error, ')}") from None


def _read_regular(path: Path, limit: int) -> bytes:
    """A regular file's bytes (not a link, a device or a FIFO), at most limit of them."""
    with _open_regular(path) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"larger than {limit} bytes")
    return data


def _open_regular(path: Path) -> BinaryIO:
    if not stat.S_ISREG(path.lstat().st_mode):  # a device is not even opened
        raise OSError(f"{path.name} is not a regular file")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path.name} is not a regular file")
    return os.fdopen(fd, "rb")


def _import_file(bundle: Path, name: str, entry: _Entry, cache: Cache) -> None:
    """The file into the cache if it is a regular file of the declared size and sha256; nothing of it otherwise."""
    source = bundle / name
    if (bundle / "blobs").is_symlink():
        raise StackbuildError(f"{bundle / 'blobs'}: a link: a bundle's files are its own")
    with cache.scratch.temp_dir() as tmp:
        part, digest, copied = tmp / "part", hashlib.sha256(), 0
        try:
            with _open_regular(source) as src, part.open("wb") as out:
                while chunk := src.read(min(CHUNK, entry.size + 1 - copied)):
                    copied += len(chunk)
                    if copied > entry.size:
                        break
                    digest.update(chunk)
                    out.write(chunk)
        except OSError as err:
            raise StackbuildError(f"{source}: cannot be imported: {err.strerror or err}") from err
        if copied != entry.size or digest.hexdigest() != entry.sha256:
            raise StackbuildError(
                f"{source}: not the {entry.size} bytes with sha256 {entry.sha256} the bundle lists: the bundle "
                "is damaged; nothing of it entered the cache"
            )
        if name != "lock.json":
            cache.add_part(part, entry.sha256, str(source))


# What a store's commits and tags are: its objects, refs and shallow list. Its config, hooks and
# alternates stay behind, so nothing the bundle's author wrote there is run or followed.
_STORE_PARTS = ("objects", "refs", "packed-refs", "shallow")
_LEFT_OUT = {"objects/info/alternates", "objects/info/http-alternates"}


def _git_store(bundle: Path, entry: _GitEntry, into: Path) -> Path:
    """A bare repository at into holding the bundle store's objects and refs, and nothing else of it:
    no link is followed (not even a linked part), only regular files are read."""
    store = bundle / entry.path
    if any(p.is_symlink() for p in (bundle / "git", store)) or not store.is_dir():
        raise StackbuildError(f"{store}: not a git store directory in the bundle (make it with `stackbuild vendor`)")
    git.git("init", "--quiet", "--bare", "--", str(into))
    try:
        for part in _STORE_PARTS:
            _copy_part(store, part, into)
    except OSError as err:
        raise StackbuildError(f"{store}: cannot be imported: {err.strerror or err}") from err
    return into


def _copy_part(store: Path, part: str, into: Path) -> None:
    top = store / part
    if not os.path.lexists(top) or top.is_symlink():
        return
    if not top.is_dir():
        _copy_regular(top, into / part)
        return
    for directory, dirs, files in os.walk(top, followlinks=False):
        here = Path(directory)
        (into / here.relative_to(store)).mkdir(parents=True, exist_ok=True)
        dirs[:] = sorted(d for d in dirs if not (here / d).is_symlink())
        for name in sorted(files):
            relative = (here / name).relative_to(store)
            if relative.as_posix() not in _LEFT_OUT:
                _copy_regular(here / name, into / relative)


def _copy_regular(source: Path, target: Path) -> None:
    """source's bytes into target when it is a regular file (not a link, a FIFO or a device)."""
    if not stat.S_ISREG(source.lstat().st_mode):
        return
    with _open_regular(source) as src, target.open("wb") as out:
        shutil.copyfileobj(src, out)


def _import_commit(bundle: Path, git_entry: _GitEntry, site: SiteConfig, cache: Cache, say: Say) -> None:
    """One git entry of a bundle into the mirror this site fetches its URL into, every object checked."""
    target = cache.git_mirror(site.repo_url(git_entry.url))
    checked = site.skipped_checks(git_entry.url)
    with cache.locks.exclusive(f"git-{target.stem}"), cache.scratch.temp_dir() as tmp:
        source = _git_store(bundle, git_entry, tmp / "bundled.git")
        if target.is_dir():
            if left := _copy_commit(source, target, git_entry.commit, checked):
                names = ", ".join(ref.removeprefix("refs/tags/") for ref in left)
                say(
                    f"[stackbuild] import: {redact(git_entry.url)} {git_entry.commit[:12]}: the bundle's tags "
                    f"{names} not taken (a mirror takes a commit's tags only with the commit, and moves none)"
                )
            return
        # A new store appears whole (as git.mirror makes them).
        _copy_commit(source, tmp / "store.git", git_entry.commit, checked)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp / "store.git", target)


def import_bundle(bundle: Path, site: SiteConfig, cache: Cache, say: Say) -> Imported:
    """Fill cache from bundle, every file checked against the bundle's sha256 and size and every git
    object against its hash; git sources are stored under the URLs this site fetches them from."""
    manifest = _read_manifest(bundle)
    for name, entry in manifest.files.items():
        _import_file(bundle, name, entry, cache)  # a mismatch is an error naming the file; nothing enters
    blobs = len(manifest.files) - 1
    total = sum(entry.size for name, entry in manifest.files.items() if name != "lock.json")
    say(f"[stackbuild] import: {blobs} files checked into {cache.root}")
    for git_entry in manifest.git:
        try:
            _import_commit(bundle, git_entry, site, cache, say)
        except git.ObjectRefused as err:
            raise git.SourceError(f"{redact(git_entry.url)} at {git_entry.commit}: {err}") from None
    say(f"[stackbuild] import: {len(manifest.git)} git commits")
    return Imported(blobs, total, len(manifest.git), manifest.lock_sha256)
