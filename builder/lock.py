"""Lockfiles (`lockfiles/<stack>.lock.json`): everything a build needs, resolved and pinned.

Versioned (lock_version), with the digest of the manifest it came from and a digest of its
own content. Builds read only the lock. `check` compares a lock with the manifest and the
world (moved git refs, changed local trees) and lists the differences.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from builder import base as base_mod
from builder import sources
from builder.errors import StackbuildError
from builder.fetch import Cache, HttpClient, Progress, sha256_file
from builder.manifest import Arch, Manifest, Package, topological_order
from builder.siteconfig import SiteConfig

LOCK_VERSION = 1
Say = Callable[[str], None]


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LockedPackage(Frozen):
    kind: Literal["toolkit", "ops", "nnal"]
    arch: Arch
    file: str
    url: str | None = None
    generate: str | None = None
    sha256: str
    size: int | None = None


class LockedSource(Frozen):
    kind: Literal["git", "path"]
    url: str | None = None
    ref: str | None = None
    commit: str | None = None
    path: str | None = None
    tree_sha256: str | None = None

    def describe(self) -> str:
        if self.kind == "git":
            return f"git {self.ref} {self.commit}"
        return f"source tree {self.tree_sha256}"


class LockedComponent(Frozen):
    id: str
    depends_on: list[str]
    source: LockedSource


class LockedBaseTarball(Frozen):
    sha256: str
    packages: dict[str, str]


class LockedBase(Frozen):
    kind: Literal["image", "bootstrap"]
    image: str | None = None
    suite: str | None = None
    mirror: str | None = None
    variant: str | None = None
    source_date_epoch: int | None = None
    # arch -> flavor ('devel' / 'runtime') -> tarball
    tarballs: dict[str, dict[str, LockedBaseTarball]] = {}


class Lock(Frozen):
    lock_version: int
    stack: str
    manifest_sha256: str
    toolkit_vendor: str
    toolkit_version: str
    chip: str
    packages: list[LockedPackage]
    base: LockedBase
    components: list[LockedComponent]
    order: list[str]
    lock_sha256: str = ""

    def content_sha256(self) -> str:
        return _digest(self.model_dump(mode="json", exclude={"lock_sha256"}))

    def component(self, component_id: str) -> LockedComponent:
        return next(c for c in self.components if c.id == component_id)


def _digest(data: object) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def manifest_digest(manifest: Manifest) -> str:
    return _digest(manifest.model_dump(mode="json", by_alias=True))


def lock_path(root: Path, stack: str) -> Path:
    return root / "lockfiles" / f"{stack}.lock.json"


def host_arch() -> str:
    machine = platform.machine()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def read(path: Path) -> Lock:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError as err:
        raise StackbuildError(f"{path}: no lockfile: run `stackbuild lock {path.name.split('.')[0]}`") from err
    except (OSError, json.JSONDecodeError) as err:
        raise StackbuildError(f"{path}: cannot read the lockfile: {err}") from err
    if data.get("lock_version") != LOCK_VERSION:
        raise StackbuildError(
            f"{path}: lock_version {data.get('lock_version')!r} is not {LOCK_VERSION}: relock with this stackbuild"
        )
    try:
        lock = Lock.model_validate(data)
    except ValidationError as err:
        raise StackbuildError(f"{path}: malformed lockfile: {err.errors()[0]['msg']}") from err
    if lock.lock_sha256 != lock.content_sha256():
        raise StackbuildError(f"{path}: lock_sha256 does not match its content (edited by hand?): relock")
    return lock


def write(lock: Lock, path: Path) -> None:
    sealed = lock.model_copy(update={"lock_sha256": lock.content_sha256()})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(sealed.model_dump(mode="json"), indent=2, sort_keys=False) + "\n")
    tmp.replace(path)


def generate_package(package: Package, manifest_dir: Path, cache: Cache) -> str:
    """Run a package's generate command and put its output in the cache; its sha256."""
    assert package.generate is not None
    with tempfile.TemporaryDirectory() as out:
        command = package.generate.replace("{output_dir}", shlex.quote(out))
        run = subprocess.run(command, shell=True, cwd=manifest_dir, capture_output=True, text=True)
        produced = Path(out) / package.file
        if run.returncode != 0 or not produced.is_file():
            detail = run.stderr.strip().splitlines()[-1:] or [f"{package.file} was not written"]
            raise StackbuildError(f"generating {package.file} failed: {detail[0]}")
        return cache.add_file(produced, package.sha256)


def pin_package(
    kind: Literal["toolkit", "ops", "nnal"],
    arch: Arch,
    package: Package,
    manifest_dir: Path,
    site: SiteConfig,
    cache: Cache,
    client: HttpClient,
    say: Say,
) -> LockedPackage:
    size = None
    if package.generate is not None:
        sha = generate_package(package, manifest_dir, cache)
        size = cache.blob(sha).stat().st_size
    else:
        assert package.url is not None
        sha = package.sha256 or ""
        local = find_installer(site, package.file, package.sha256)
        if local is not None:
            sha = cache.add_file(local, package.sha256)
            size = local.stat().st_size
        elif package.sha256:
            # Pinned by the manifest: check it is there without pulling gigabytes now.
            size = client.head(site.rewrite(package.url))
        else:
            say(f"  {package.file}: no sha256 in the manifest, downloading to pin it")
            sha = client.download(site.rewrite(package.url), cache, progress=Progress(f"  {package.file}", say))
            size = cache.blob(sha).stat().st_size
    return LockedPackage(
        kind=kind, arch=arch, file=package.file, url=package.url, generate=package.generate, sha256=sha, size=size
    )


def find_installer(site: SiteConfig, file: str, sha256: str | None) -> Path | None:
    for directory in site.installer_dirs:
        candidate = directory / file
        if candidate.is_file() and (sha256 is None or sha256_file(candidate) == sha256):
            return candidate
    return None


def pin_source(manifest: Manifest, component_id: str, manifest_dir: Path, site: SiteConfig) -> LockedSource:
    source = manifest.component(component_id).source
    if source.git is not None:
        assert source.ref is not None
        commit = sources.resolve_ref(site.repo_url(source.git), source.ref)
        return LockedSource(kind="git", url=source.git, ref=source.ref, commit=commit)
    assert source.path is not None
    return LockedSource(kind="path", path=source.path, tree_sha256=sources.tree_hash(manifest_dir / source.path))


def pin_base(manifest: Manifest, arches: list[str], site: SiteConfig, cache: Cache, say: Say) -> LockedBase:
    spec = manifest.base
    if spec.image is not None:
        return LockedBase(kind="image", image=spec.image)
    assert spec.bootstrap is not None
    boot = spec.bootstrap
    tarballs: dict[str, dict[str, LockedBaseTarball]] = {}
    for arch in arches:
        tarballs[arch] = {}
        for flavor in ("devel", "runtime"):
            say(f"  base {arch} {flavor}: mmdebstrap {boot.suite} (cached after the first run)")
            result = base_mod.bootstrap(boot, arch, flavor, cache, mirror=site.rewrite(boot.mirror))
            tarballs[arch][flavor] = LockedBaseTarball(sha256=result.sha256, packages=result.packages)
    return LockedBase(
        kind="bootstrap",
        suite=boot.suite,
        mirror=boot.mirror,
        variant=boot.variant,
        source_date_epoch=base_mod.SOURCE_DATE_EPOCH,
        tarballs=tarballs,
    )


def resolve(
    manifest: Manifest,
    manifest_dir: Path,
    site: SiteConfig,
    cache: Cache,
    client: HttpClient,
    say: Say,
    arches: list[str] | None = None,
    previous: Lock | None = None,
    update: str | None = None,
) -> Lock:
    """A lock for the manifest. With previous and update, git commits of the other components stay."""
    arches = (
        arches
        or [a for a in manifest.platform.architectures if a == host_arch()]
        or [manifest.platform.architectures[0]]
    )
    # Sources first: they are cheap and catch configuration mistakes before any download.
    components = []
    for comp in manifest.components:
        kept = _kept_source(previous, comp.id, manifest, update)
        source = kept or pin_source(manifest, comp.id, manifest_dir, site)
        say(f"  component {comp.id}: {source.describe()}")
        components.append(LockedComponent(id=comp.id, depends_on=list(comp.depends_on), source=source))
    packages = []
    for kind in ("toolkit", "ops", "nnal"):
        package_set = getattr(manifest.toolkit.packages, kind)
        for arch, package in (package_set or {}).items():
            say(f"  package {kind} {arch}: {package.file}")
            packages.append(pin_package(kind, arch, package, manifest_dir, site, cache, client, say))
    return Lock(
        lock_version=LOCK_VERSION,
        stack=manifest.name,
        manifest_sha256=manifest_digest(manifest),
        toolkit_vendor=manifest.toolkit.vendor,
        toolkit_version=manifest.toolkit.version,
        chip=manifest.toolkit.chip,
        packages=packages,
        base=pin_base(manifest, arches, site, cache, say),
        components=components,
        order=topological_order(manifest.components),
    )


def _kept_source(
    previous: Lock | None, component_id: str, manifest: Manifest, update: str | None
) -> LockedSource | None:
    if previous is None or update is None or component_id == update:
        return None
    old = next((c for c in previous.components if c.id == component_id), None)
    source = manifest.component(component_id).source
    if old and old.source.kind == "git" and old.source.url == source.git and old.source.ref == source.ref:
        return old.source
    return None


def check(
    lock: Lock, manifest: Manifest, manifest_dir: Path, site: SiteConfig, cache: Cache, manifest_name: str
) -> list[str]:
    """Why the lock no longer matches the manifest and the sources; empty if it does."""
    problems = []
    digest = manifest_digest(manifest)
    if digest != lock.manifest_sha256:
        problems.append(f"manifest: sha256 {lock.manifest_sha256[:12]} -> {digest[:12]} ({manifest_name} changed)")
    locked = {c.id: c for c in lock.components}
    for comp in manifest.components:
        if comp.id not in locked:
            problems.append(f"component {comp.id}: not in the lock")
            continue
        old = locked[comp.id].source
        try:
            new = pin_source(manifest, comp.id, manifest_dir, site)
        except StackbuildError as err:
            problems.append(f"component {comp.id}: cannot resolve: {err}")
            continue
        if old.kind == new.kind == "git" and old.commit != new.commit:
            problems.append(f"component {comp.id}: {new.ref} moved {old.commit} -> {new.commit}")
        elif old.kind == new.kind == "path" and old.tree_sha256 != new.tree_sha256:
            problems.append(f"component {comp.id}: source tree {old.tree_sha256} -> {new.tree_sha256}")
        elif old.kind != new.kind:
            problems.append(f"component {comp.id}: source changed from {old.kind} to {new.kind}")
    for gone in set(locked) - {c.id for c in manifest.components}:
        problems.append(f"component {gone}: in the lock but not in the manifest")
    for package in lock.packages:
        spec = getattr(manifest.toolkit.packages, package.kind) or {}
        current = spec.get(package.arch)
        if current is not None and current.generate is not None:
            sha = generate_package(current, manifest_dir, cache)
            if sha != package.sha256:
                problems.append(f"package {package.file}: generated sha256 {package.sha256} -> {sha}")
    return problems
