"""Publishing: the built and smoke-tested final images of every architecture, pushed as they are,
then one OCI image index per tag so `docker pull` picks the host's architecture.

Tags, as the official CANN images name theirs: `<ver>-<chip>-<os><osver>-py<x.y>` (the devel image, as
the official full image) and `...-runtime`; an immutable `lock-<digest>` (and `-runtime`) from the
lock's digest, refused when it already names another index; optional aliases (`latest`, and
`latest-runtime`). The same lock gives the same images wherever it is built, so a second publish
of it finds each tag already naming its index and moves none. Each image's manifest gets its
provenance and its SBOM (execute.attestation) as OCI 1.1 referrers, once: through the referrers API
where the registry has one, else the referrers tag schema (`sha256-<manifest digest>`, an index of
referrers).
"""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from builder.engine import Engine
from builder.engine.registry_api import OCI_INDEX, Descriptor, RegistryClient, index_body
from builder.engine.registry_referrers import ArtifactKind, Referrers
from builder.execute import attestation
from builder.inputs.project import Origin
from builder.lock.locked import Lock
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


@dataclass(frozen=True)
class BuildRecord:
    """Where and when the images were made: for their provenance."""

    origin: Origin
    started: datetime.datetime


# The CycloneDX JSON SBOM of a final image the engine holds, for the architecture it was built for:
# handoff.sbom.image_sbom, given by the caller (the SBOM reads the image as `stackbuild sbom` does).
SbomOf = Callable[[Engine, str, Arch], str]


@dataclass(frozen=True)
class Image:
    """A final image pushed: its manifest in the registry, and the local image it was pushed from."""

    manifest: Descriptor
    local: str
    arch: Arch


def publish(
    images: Mapping[Arch, Mapping[str, str]],
    lock: Lock,
    release: str,
    target: str,
    aliases: Sequence[str],
    engine: Engine,
    client: RegistryClient,
    built: BuildRecord,
    sbom_of: SbomOf,
) -> list[Pushed]:
    """Push images (per architecture: final stage -> local tag) to target (REGISTRY/NAMESPACE) as
    <target>/<stack>; what was pushed, with digests."""
    registry, _, namespace = target.partition("/")
    repository = f"{namespace}/{lock.stack.lower()}"
    pushed: list[Pushed] = []
    indexes: dict[str, bytes] = {}
    finals: list[Image] = []
    for final, suffix in FINAL_SUFFIXES.items():
        entries = []
        for arch in sorted(images, key=lambda a: a.value):
            ref = f"{registry}/{repository}:{release}{suffix}-{arch}"
            digest = engine.push(images[arch][final], ref)
            descriptor = client.manifest(repository, digest)
            if descriptor is None:
                raise StackbuildError(f"registry {registry} lost {ref} ({digest}) right after it was pushed")
            entries.append(descriptor.entry(arch))
            finals.append(Image(descriptor, images[arch][final], arch))
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
    # Each image's provenance and SBOM before any index is put: a publish that fails in between leaves
    # no index tag naming an image without them, and the next one attaches what is missing.
    for image in finals:
        pushed += beside(
            client, f"{registry}/{repository}", image, lock, built, partial(sbom_of, engine, image.local, image.arch)
        )
    platforms = ", ".join(a.value for a in sorted(images, key=lambda a: a.value))
    for suffix, body in indexes.items():
        ours = f"sha256:{hashlib.sha256(body).hexdigest()}"
        client.put_manifest(repository, ours, body, OCI_INDEX)
        for tag in (release + suffix, immutable + suffix, *(alias + suffix for alias in aliases)):
            existing = client.manifest(repository, tag)
            if existing is not None and existing.digest == ours:  # published before, from this lock: not moved
                pushed.append(Pushed(f"{registry}/{repository}:{tag}", ours, f"index of {platforms}, already there"))
                continue
            digest = client.put_manifest(repository, tag, body, OCI_INDEX)
            pushed.append(Pushed(f"{registry}/{repository}:{tag}", digest, f"index of {platforms}"))
    return pushed


def beside(
    client: RegistryClient, where: str, image: Image, lock: Lock, built: BuildRecord, sbom: Callable[[], str]
) -> list[Pushed]:
    """The image's provenance statement and its SBOM, each attached to its manifest unless one is already
    (published before, from this lock: the SBOM is not made again)."""
    repository = where.partition("/")[2]
    present = Referrers(client).of(repository, image.manifest.digest)
    attached = []
    if not any(map(attestation.PROVENANCE.names, present)):
        now = datetime.datetime.now(datetime.timezone.utc)
        document = attestation.statement(where, [image.manifest.digest], lock, built.origin, built.started, now)
        attached.append(_attach(client, where, image, attestation.PROVENANCE, document, "provenance"))
    if not any(map(attestation.SBOM.names, present)):
        attached.append(_attach(client, where, image, attestation.SBOM, sbom().encode(), "SBOM"))
    return attached


def _attach(client: RegistryClient, where: str, image: Image, kind: ArtifactKind, document: bytes, what: str) -> Pushed:
    referrer = Referrers(client).attach(where.partition("/")[2], image.manifest, kind, document)
    return Pushed(f"{where}@{referrer}", referrer, f"{what} of {image.manifest.digest[:19]} ({image.arch})")
