"""The stage graph of a build: Dockerfiles, content keys, and what is cached or must build, and why.

A stage's key is the sha256 of its rendered Dockerfile, its build context's content, its
parents' keys and the platform. An image tagged with the key means the stage is done (it is
tagged only after its probes pass). The inputs of the last successful build of each stage
are recorded, so `plan` can say which input changed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from builder import render, sources
from builder.errors import StackbuildError
from builder.fetch import Cache
from builder.lock import Lock, manifest_digest
from builder.manifest import Manifest, topological_order

StageKind = Literal["base", "toolkit", "component", "devel", "runtime"]
STAGE_REPOSITORY = "stackbuild/stage"
PLATFORMS = {"x86_64": "linux/amd64", "aarch64": "linux/arm64"}


@dataclass
class Stage:
    name: str
    kind: StageKind
    parents: list[str]
    dockerfile: str = ""
    context_sha256: str = ""
    context_note: str = ""
    key: str = ""
    inputs: dict[str, object] = field(default_factory=dict)
    component: str | None = None
    flavor: str | None = None
    probes: str = ""

    def tag(self) -> str:
        """Stage images are shared by every stack: the key says all about the content."""
        return f"{STAGE_REPOSITORY}/{self.name}:{self.key}"


@dataclass
class Plan:
    stack: str
    arch: str
    platform: str
    repository: str
    stages: dict[str, Stage]
    drift: list[str]

    def order(self) -> list[Stage]:
        return list(self.stages.values())


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def repository_for(stack: str) -> str:
    return f"stackbuild/{stack.lower()}"


def context_of(manifest: Manifest, lock: Lock, component_id: str, manifest_dir: Path) -> tuple[str, str]:
    """(content hash, description) of a component's build context as it will be sent."""
    source = lock.component(component_id).source
    if source.kind == "git":
        return f"git:{source.commit}", f"git {source.ref} {source.commit}"
    assert source.path is not None
    tree = sources.tree_hash(manifest_dir / source.path)
    return tree, f"source tree {tree}"


def make_plan(
    manifest: Manifest, lock: Lock, manifest_dir: Path, arch: str, base_shas: dict[str, str] | None = None
) -> Plan:
    """The stages for arch. base_shas overrides the lock's base tarballs (a drifted bootstrap)."""
    if manifest_digest(manifest) != lock.manifest_sha256:
        raise StackbuildError(
            f"the manifest of {manifest.name} changed since it was locked: run `stackbuild lock {manifest.name}`"
        )
    if arch not in PLATFORMS:
        raise StackbuildError(f"unknown architecture {arch}")
    platform = PLATFORMS[arch]
    repository = repository_for(manifest.name)
    stages: dict[str, Stage] = {}
    drift: list[str] = []

    def add(stage: Stage) -> Stage:
        stage.inputs = {
            "dockerfile": _sha(stage.dockerfile),
            "context": stage.context_sha256,
            "parents": {p: stages[p].key for p in stage.parents},
            "platform": platform,
            # A stage is only done once its probes passed: new probes mean a new check.
            "probes": stage.probes,
        }
        stage.key = hashlib.sha256(json.dumps(stage.inputs, sort_keys=True).encode()).hexdigest()
        stages[stage.name] = stage
        return stage

    def image(name: str) -> str:
        return stages[name].tag()

    packages = [p for p in lock.packages if p.arch == arch]
    if not any(p.kind == "toolkit" for p in packages):
        raise StackbuildError(f"the lock of {manifest.name} has no toolkit package for {arch}")
    for flavor in ("devel", "runtime"):
        if lock.base.kind == "bootstrap":
            tarball = lock.base.tarballs.get(arch, {}).get(flavor)
            if tarball is None:
                fix = f"stackbuild lock {manifest.name} --arch {arch}"
                raise StackbuildError(f"the lock of {manifest.name} has no {arch} base: run `{fix}`")
            sha = (base_shas or {}).get(flavor, tarball.sha256)
            context, note = sha, f"base tarball {sha}"
        else:
            context, note = f"image:{lock.base.image}", f"image {lock.base.image}"
        add(Stage(f"base-{flavor}", "base", [], render.base(flavor, lock), context, note, flavor=flavor))

    package_shas = ",".join(sorted(p.sha256 for p in packages))
    add(
        Stage(
            "toolkit",
            "toolkit",
            ["base-devel"],
            render.toolkit(lock, image("base-devel"), packages),
            _sha(package_shas),
            f"packages {_sha(package_shas)}",
        )
    )
    needs = transitive_deps(manifest)
    for cid in lock.order:
        deps = needs[cid]
        context, note = context_of(manifest, lock, cid, manifest_dir)
        source = lock.component(cid).source
        if source.kind == "path" and source.tree_sha256 != context:
            drift.append(f"{cid}: source tree {source.tree_sha256} (locked) -> {context} (working tree)")
        dockerfile = render.component(manifest, lock, cid, image("toolkit"), [(d, image(d)) for d in deps])
        probes = json.dumps([p.model_dump(mode="json") for p in manifest.component(cid).probes], sort_keys=True)
        add(Stage(cid, "component", ["toolkit", *deps], dockerfile, context, note, component=cid, probes=_sha(probes)))
    built = [(cid, image(cid)) for cid in lock.order]
    add(
        Stage(
            "devel-image",
            "devel",
            ["toolkit", *lock.order],
            render.devel(manifest, image("toolkit"), built),
        )
    )
    add(
        Stage(
            "runtime-image",
            "runtime",
            ["base-runtime", "toolkit", *lock.order],
            render.runtime(manifest, lock, image("base-runtime"), image("toolkit"), built, arch),
        )
    )
    return Plan(manifest.name, arch, platform, repository, stages, drift)


def transitive_deps(manifest: Manifest) -> dict[str, list[str]]:
    """Every component each one needs (directly or not), in build order."""
    order = topological_order(manifest.components)
    direct = {c.id: c.depends_on for c in manifest.components}
    closure: dict[str, set[str]] = {}
    for cid in order:
        closure[cid] = set(direct[cid]).union(*(closure[d] for d in direct[cid]))
    return {cid: [d for d in order if d in closure[cid]] for cid in order}


# -- what changed since the last recorded build ---------------------------------------------


def state_path(cache: Cache, plan: Plan, stage: str) -> Path:
    return cache.root / "state" / plan.stack.lower() / plan.arch / f"{stage}.json"


def record_build(cache: Cache, plan: Plan, stage: Stage) -> None:
    path = state_path(cache, plan, stage.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"key": stage.key, "inputs": stage.inputs, "context_note": stage.context_note}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True))
    tmp.replace(path)


def why(cache: Cache, plan: Plan, stage: Stage) -> str:
    """Why a stage that is not cached must build, against its last recorded build."""
    path = state_path(cache, plan, stage.name)
    if not path.is_file():
        return "never built here"
    last = json.loads(path.read_text())
    if last["key"] == stage.key:
        return "image missing (removed since it was built)"
    old = last["inputs"]
    reasons = []
    if old.get("platform") != stage.inputs["platform"]:
        reasons.append(f"platform {old.get('platform')} -> {stage.inputs['platform']}")
    if old.get("context") != stage.context_sha256:
        before = last.get("context_note", "").rsplit(" ", 1)[-1]
        after = stage.context_note.rsplit(" ", 1)[-1]
        label = stage.context_note.rsplit(" ", 1)[0] or "context"
        reasons.append(f"{stage.name}: {label} {before[:12]} -> {after[:12]}")
    old_parents = old.get("parents", {})
    new_parents = stage.inputs["parents"]
    assert isinstance(new_parents, dict)
    changed = [p for p in stage.parents if old_parents.get(p) != new_parents.get(p)]
    if changed:
        reasons.append(f"{stage.name}: parent {', '.join(changed)} rebuilt")
    if old.get("dockerfile") != stage.inputs["dockerfile"] and not changed:
        reasons.append(f"{stage.name}: Dockerfile changed (manifest or templates)")
    if old.get("probes") != stage.probes:
        reasons.append(f"{stage.name}: probes changed")
    return "; ".join(reasons) or "inputs changed"
