"""What the final images say about themselves: OCI labels and the embedded lock.

What follows from the lock is in the rendered Dockerfile (so in the stage key); where the stack's
definition was checked out from (source, revision) is given to the build as --label, outside the
key, so a new commit that changes nothing in the lock reuses the images (and their digests). Either
way the image that was smoke-tested is the one published, with nothing added after it."""

from __future__ import annotations

import datetime

from builder.inputs.project import Origin
from builder.lock.model import Lock, LockedBootstrapBase, LockedGit
from builder.manifest.model import Manifest
from builder.store.http import redact

LOCK_IN_IMAGE = "/etc/stackbuild/stack.lock.json"


def release_name(manifest: Manifest) -> str:
    """The images' name as the official CANN images spell theirs: <ver>-<chip>-<os><osver>-py<x.y>."""
    m = manifest
    return f"{m.toolkit.version.lower()}-{m.toolkit.chip}-{m.platform.os}{m.platform.os_version}-py{m.platform.python}"


def origin_labels(origin: Origin) -> dict[str, str]:
    """The checkout the final images were built from (build-time labels, not in the key)."""
    labels = {}
    if origin.source:
        labels["org.opencontainers.image.source"] = origin.source
    if origin.revision:
        labels["org.opencontainers.image.revision"] = origin.revision
    return labels


def image_labels(manifest: Manifest, lock: Lock, devel: bool) -> dict[str, str]:
    suffix = "-devel" if devel else ""
    labels = {
        "org.opencontainers.image.title": f"{manifest.name} {'devel' if devel else 'runtime'} image",
        "org.opencontainers.image.version": release_name(manifest) + suffix,
    }
    if isinstance(lock.base, LockedBootstrapBase):  # the lock's own date: the same lock, the same label
        created = datetime.datetime.fromtimestamp(lock.base.source_date_epoch, datetime.timezone.utc)
        labels["org.opencontainers.image.created"] = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    labels["org.stackbuild.lock.sha256"] = lock.lock_sha256
    labels["org.stackbuild.toolkit.version"] = lock.toolkit.version
    for component in lock.components:
        source = component.source
        where = (
            f"{redact(source.url)}@{source.commit}" if isinstance(source, LockedGit) else f"tree {source.tree_sha256}"
        )
        labels[f"org.stackbuild.component.{component.id}"] = where
    return labels
