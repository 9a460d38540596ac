"""Publishing: the built and smoke-tested final images of every architecture, pushed as they are,
then one OCI image index per tag so `docker pull` picks the host's architecture.

Tags, as the official CANN images name theirs: `<ver>-<chip>-<os><osver>-py<x.y>` (the devel image, as
the official full image) and `...-runtime`; an immutable `lock-<digest>` (and `-runtime`) from the
lock's digest, refused when it already names another index; optional aliases (`latest`, and
`latest-runtime`). The same lock gives the same images wherever it is built, so a second publish
of it finds each tag already naming its index and moves none.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from builder.engine import Engine
from builder.engine.registry_api import OCI_INDEX, RegistryClient, index_body
from builder.lock.model import Lock
from builder.model.arch import Arch
from builder.model.errors import StackbuildError
from builder.plan.labels import FINAL_SUFFIXES


@dataclass(frozen=True)
class Pushed:
    ref: str
    digest: str
    what: str


def immutable_tag(lock: Lock) -> str:
    return f"lock-{lock.lock_sha256[:16]}"


def publish(
    images: Mapping[Arch, Mapping[str, str]],
    lock: Lock,
    release: str,
    target: str,
    aliases: Sequence[str],
    engine: Engine,
    client: RegistryClient,
) -> list[Pushed]:
    """Push images (per architecture: final stage -> local tag) to target (REGISTRY/NAMESPACE) as
    <target>/<stack>; what was pushed, with digests."""
    registry, _, namespace = target.partition("/")
    repository = f"{namespace}/{lock.stack.lower()}"
    pushed: list[Pushed] = []
    indexes: dict[str, bytes] = {}
    for final, suffix in FINAL_SUFFIXES.items():
        entries = []
        for arch in sorted(images, key=lambda a: a.value):
            ref = f"{registry}/{repository}:{release}{suffix}-{arch}"
            digest = engine.push(images[arch][final], ref)
            descriptor = client.manifest(repository, digest)
            if descriptor is None:
                raise StackbuildError(f"registry {registry} lost {ref} ({digest}) right after it was pushed")
            entries.append(descriptor.entry(arch))
            pushed.append(Pushed(ref, digest, f"{final} for {arch}"))
        indexes[suffix] = index_body(entries)
    immutable = immutable_tag(lock)
    # Before any index is put: a refusal leaves every index tag as it was (the per-architecture
    # tags, <release>[-runtime]-<arch>, were pushed above: an index needs its manifests in the registry).
    for suffix, body in indexes.items():
        existing = client.manifest(repository, immutable + suffix)
        ours = f"sha256:{hashlib.sha256(body).hexdigest()}"
        if existing is not None and existing.digest != ours:
            raise StackbuildError(
                f"{registry}/{repository}:{immutable}{suffix} already names {existing.digest}, not this build's "
                f"index {ours}: an immutable tag is never moved (the same lock gave other images here: "
                "`stackbuild verify-reproducible` names what differs)"
            )
    platforms = ", ".join(a.value for a in sorted(images, key=lambda a: a.value))
    for suffix, body in indexes.items():
        ours = f"sha256:{hashlib.sha256(body).hexdigest()}"
        for tag in (release + suffix, immutable + suffix, *(alias + suffix for alias in aliases)):
            existing = client.manifest(repository, tag)
            if existing is not None and existing.digest == ours:  # published before, from this lock: not moved
                pushed.append(Pushed(f"{registry}/{repository}:{tag}", ours, f"index of {platforms}, already there"))
                continue
            digest = client.put_manifest(repository, tag, body, OCI_INDEX)
            pushed.append(Pushed(f"{registry}/{repository}:{tag}", digest, f"index of {platforms}"))
    return pushed
