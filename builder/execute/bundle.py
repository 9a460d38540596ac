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
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.inputs import git
from builder.inputs.contexts import FileItem
from builder.inputs.site import SiteConfig
from builder.lock.model import Lock, LockedGit, LockedSubmodule
from builder.model.errors import InputError, StackbuildError
from builder.model.say import Say
from builder.plan.stage import Plan
from builder.store.cache import Cache
from builder.store.files import sha256_file

BUNDLE_FILE = "bundle.json"
BUNDLE_FORMAT = 1


@dataclass(frozen=True)
class Imported:
    files: int
    bytes: int
    commits: int
    lock_sha256: str


def git_sources(lock: Lock, site: SiteConfig) -> Iterator[tuple[str, str, str]]:
    """(lock URL, fetch URL on this site, commit) of every git source and submodule, recursively."""

    def subs(found: Sequence[LockedSubmodule]) -> Iterator[tuple[str, str, str]]:
        for sub in found:
            yield sub.url, site.rewrite(sub.url), sub.commit
            yield from subs(sub.submodules)

    for component in lock.components:
        if isinstance(component.source, LockedGit):
            source = component.source
            yield source.url, site.repo_url(source.url), source.commit
            yield from subs(source.submodules)


def _store_name(url: str) -> str:
    return f"git/{hashlib.sha256(url.encode()).hexdigest()[:16]}.git"


def _copy_commit(source: Path, target: Path, commit: str, verify: bool = False) -> None:
    """commit (depth 1) and the tags on it from the bare repository source into target (made if missing)."""
    if not target.is_dir():
        git.git("init", "--quiet", "--bare", str(target))
    tags = git.git("-C", str(source), "tag", "--points-at", commit).split()
    checks = ["-c", "transfer.fsckObjects=true"] if verify else []  # every object's hash checked on the way in
    fetch = [*checks, "-C", str(target), "fetch", "--quiet", "--no-tags", "--depth", "1", f"file://{source}"]
    git.git(*fetch, commit, *(f"+refs/tags/{tag}:refs/tags/{tag}" for tag in tags), timeout=1800)


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
                    _add_blob(staging, files, item.obtain(), f"{plan.arch} {stage.name}: {item.arcname}")
    say(f"[stackbuild] vendor: {len(files)} files")
    commits = []
    for url, fetch_url, commit in git_sources(lock, site):
        name = _store_name(url)
        _copy_commit(git.mirror(fetch_url, commit, cache), staging / name, commit)
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


def import_bundle(bundle: Path, site: SiteConfig, cache: Cache, say: Say) -> Imported:
    """Fill cache from bundle, every file checked against the bundle's sha256 and every git object
    against its hash; git sources are stored under the URLs this site fetches them from."""
    try:
        manifest = json.loads((bundle / BUNDLE_FILE).read_text())
    except (OSError, ValueError) as err:
        raise InputError(
            f"{bundle / BUNDLE_FILE}: not a stackbuild bundle ({err}): make one with `stackbuild vendor`"
        ) from err
    if not isinstance(manifest, dict) or not {"files", "git", "lock_sha256"} <= set(manifest):
        raise InputError(f"{bundle / BUNDLE_FILE}: not a stackbuild bundle (files, git or lock_sha256 missing)")
    if manifest.get("format") != BUNDLE_FORMAT:
        raise InputError(
            f"{bundle / BUNDLE_FILE}: format {manifest.get('format')!r}, this stackbuild reads {BUNDLE_FORMAT}"
        )
    total = 0
    for name, meta in manifest["files"].items():
        if name == "lock.json":
            if sha256_file(bundle / name) != meta["sha256"]:
                raise StackbuildError(
                    f"{bundle / name}: sha256 differs from the bundle's manifest: the bundle is damaged"
                )
            continue
        cache.add_file(bundle / name, meta["sha256"])  # a mismatch is an error naming the file; nothing enters
        total += int(meta["size"])
    say(f"[stackbuild] import: {len(manifest['files']) - 1} files checked into {cache.root}")
    for entry in manifest["git"]:
        target = cache.git_mirror(site.repo_url(entry["url"]))
        with cache.lock(f"git-{target.stem}"):
            if target.is_dir():
                _copy_commit(bundle / entry["path"], target, entry["commit"], verify=True)
                continue
            with cache.temp_dir() as tmp:  # a new store appears whole (as git.mirror makes them)
                _copy_commit(bundle / entry["path"], tmp / "store.git", entry["commit"], verify=True)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(tmp / "store.git", target)
    say(f"[stackbuild] import: {len(manifest['git'])} git commits")
    return Imported(len(manifest["files"]) - 1, total, len(manifest["git"]), manifest["lock_sha256"])
