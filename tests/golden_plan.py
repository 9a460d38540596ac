"""The golden stack (tests/golden/): its lock built from the manifest, and its plan (also with nothing to
fetch, for builds on a fake engine)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from builder import lock as lock_io
from builder import manifest
from builder.inputs.download_package import DownloadPackage, LockedDownload
from builder.inputs.git_source import GitSource, LockedGit
from builder.inputs.image_base import ImageBase, LockedImageBase
from builder.inputs.project import Origin
from builder.inputs.site import SiteConfig
from builder.lock.locked import (
    LOCK_VERSION,
    ArchSection,
    Lock,
    LockedComponent,
    LockedPackage,
    LockedToolkit,
)
from builder.manifest.graph import topological_order
from builder.manifest.toolkit import PACKAGE_ROLES
from builder.model.arch import Arch
from builder.model.names import DEFAULT_PREFIX
from builder.plan.make import make_plan
from builder.plan.plan_model import Plan
from builder.plan.prepare import Request, resolve_inputs
from builder.store.cache import Cache
from tests.conftest import ROOT

GOLDEN = ROOT / "tests" / "golden"


def golden_lock(loaded: manifest.Manifest) -> Lock:
    """The golden stack's lock: fixed commits, the manifest's package sha256."""
    packages: list[LockedPackage] = []
    for role in PACKAGE_ROLES:
        package = loaded.toolkit.packages.of(role)[Arch.X86_64]
        assert isinstance(package, DownloadPackage) and package.sha256
        packages.append(LockedDownload(role=role, file=package.file, url=package.url, sha256=package.sha256))
    components = []
    for i, c in enumerate(loaded.components):
        assert isinstance(c.source, GitSource)
        source = LockedGit(url=c.source.git, ref=c.source.ref, commit=f"{i + 1}" * 40)
        components.append(LockedComponent(id=c.id, depends_on=c.depends_on, source=source, network=c.network))
    assert isinstance(loaded.base, ImageBase)
    return Lock(
        lock_version=LOCK_VERSION,
        stack=loaded.name,
        manifest_sha256=manifest.manifest_digest(loaded),
        toolkit=LockedToolkit(vendor="huawei", version=loaded.toolkit.version, chip=loaded.toolkit.chip),
        base=LockedImageBase(image=loaded.base.image),
        components=components,
        order=topological_order({c.id: c.depends_on for c in loaded.components}),
        architectures={Arch.X86_64: ArchSection(packages=packages)},
    )


def golden_request(manifest_path: Path = GOLDEN / "golden.yaml", image_prefix: str = DEFAULT_PREFIX) -> Request:
    """image_prefix: the names a user's stackbuild gives by default (the golden files show those)."""
    loaded = manifest.load(manifest_path)
    locked = lock_io.read(GOLDEN / "golden.lock.json")
    cache = Cache(GOLDEN / "no-cache")
    return Request(loaded, manifest_path, locked, SiteConfig(), cache, Arch.X86_64, image_prefix=image_prefix)


def golden_plan(toolkit_version: str | None = None, image_prefix: str = DEFAULT_PREFIX) -> Plan:
    """toolkit_version: the golden lock's toolkit as another release (its layout and runtime image)."""
    request = golden_request(image_prefix=image_prefix)
    if toolkit_version is not None:
        loaded = request.manifest.model_copy(
            update={"toolkit": request.manifest.toolkit.model_copy(update={"version": toolkit_version})}
        )
        toolkit = request.lock.toolkit.model_copy(update={"version": toolkit_version})
        locked = request.lock.model_copy(
            update={"toolkit": toolkit, "manifest_sha256": manifest.manifest_digest(loaded)}
        )
        request = dataclasses.replace(request, manifest=loaded, lock=locked)
    # Not this repository's checkout: the finals' source and revision labels would follow every commit.
    inputs = dataclasses.replace(resolve_inputs(request, say=print), origin=Origin())
    return make_plan(inputs)


def without_contexts(plan: Plan) -> Plan:
    """The plan with nothing to fetch for any stage (the keys stay: they are of the inputs)."""
    return dataclasses.replace(plan, stages={n: dataclasses.replace(s, context=()) for n, s in plan.stages.items()})
