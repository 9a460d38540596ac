"""What the final images say about themselves: OCI labels and the embedded lock.

All of it follows from the lock and is in the rendered Dockerfile (so in the stage key): nothing of
the checkout, the host, the time or the engine, so the same lock gives the same bytes from any clone
on any machine. Where the stack's definition was checked out from (origin, commit) is provenance,
recorded beside the image (execute.provenance), never in it."""

from __future__ import annotations

import datetime

from builder.inputs.source_kinds import kind_of
from builder.lock.locked import Lock
from builder.manifest.model import Manifest
from builder.model.arch import Arch

LOCK_IN_IMAGE = "/etc/stackbuild/stack.lock.json"
COMPONENT_LABEL = "org.stackbuild.component."
SMOKE_COMMAND = "org.stackbuild.smoke.command"
SMOKE_EXPECT = "org.stackbuild.smoke.expect"
SMOKE_NEEDS_DEVICE = "org.stackbuild.smoke.needs-device"
# The user the image runs as (none: root), for `doctor` and the Kubernetes manifests: its config's USER
# gives only the IDs.
USER_NAME, USER_UID, USER_GID = "org.stackbuild.user", "org.stackbuild.user.uid", "org.stackbuild.user.gid"


def as_built(lock: Lock, trees: dict[str, str]) -> Lock:
    """The lock the final images carry: each source as its context held it (a path source's working
    tree that moved since `lock` is built as it is, and the image says so), resealed when any moved.
    trees: each component's source content as placed."""
    moved = {
        c.id: c.model_copy(update={"source": built})
        for c in lock.components
        if c.id in trees and (built := kind_of(c.source).built_from(c.source, trees[c.id])) != c.source
    }
    if not moved:
        return lock
    return lock.model_copy(update={"components": [moved.get(c.id, c) for c in lock.components]}).sealed()


def release_name(manifest: Manifest) -> str:
    """The images' name as the official CANN images spell theirs: <ver>-<chip>-<os><osver>-py<x.y>."""
    m = manifest
    return f"{m.toolkit.version.lower()}-{m.toolkit.chip}-{m.platform.os}{m.platform.os_version}-py{m.platform.python}"


# What follows the release in each final image's tags and version label. The devel image carries the
# official full image's name (Ascend/cann-container-image's cann/<ver>-<chip>-<os><osver>-py<x.y> images
# hold the whole toolkit, as the devel image does); the runtime image, which has only what the toolkit's
# runtime needs, is -runtime.
FINAL_SUFFIXES = {"runtime-image": "-runtime", "devel-image": ""}


def image_labels(manifest: Manifest, lock: Lock, arch: Arch, devel: bool) -> dict[str, str]:
    """What `stackbuild inspect` shows without opening the image: the release, the lock's digest, the
    architecture, the host driver and firmware it is certified for, its smoke command (so `stackbuild
    smoke TAG` needs no checkout), and the source of each component it holds."""
    suffix = FINAL_SUFFIXES["devel-image" if devel else "runtime-image"]
    labels = {
        "org.opencontainers.image.title": f"{manifest.name} {'devel' if devel else 'runtime'} image",
        "org.opencontainers.image.version": release_name(manifest) + suffix,
    }
    # The lock's own date: the same lock, the same label.
    created = datetime.datetime.fromtimestamp(lock.base.source_date_epoch, datetime.timezone.utc)
    labels["org.opencontainers.image.created"] = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    labels["org.stackbuild.lock.sha256"] = lock.lock_sha256
    labels["org.stackbuild.toolkit.version"] = lock.toolkit.version
    labels["org.stackbuild.arch"] = arch.value
    labels["org.stackbuild.host.driver"] = manifest.host.driver
    if manifest.host.firmware:
        labels["org.stackbuild.host.firmware"] = manifest.host.firmware
    labels[SMOKE_COMMAND] = manifest.smoke.command
    labels[SMOKE_EXPECT] = manifest.smoke.expect
    labels[SMOKE_NEEDS_DEVICE] = "true" if manifest.smoke.needs_device else "false"
    if user := manifest.run_user:
        labels |= {USER_NAME: user.name, USER_UID: str(user.uid), USER_GID: str(user.gid)}
    # One label per component the image holds: the runtime image lacks those none of whose parts reach it.
    for component in lock.components:
        if not devel and not manifest.component(component.id).reaches_runtime:
            continue
        labels[f"{COMPONENT_LABEL}{component.id}"] = kind_of(component.source).describe(component.source).reference
    return labels
