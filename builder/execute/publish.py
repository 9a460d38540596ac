"""Publishing: the built and smoke-tested final images of every architecture, pushed as they are,
then one OCI image index per tag so `docker pull` picks the host's architecture.

Tags, as the official CANN images name theirs: `<ver>-<chip>-<os><osver>-py<x.y>` (the devel image, as
the official full image) and `...-runtime`; an immutable `lock-<digest>` (and `-runtime`) from the
lock's digest, refused when it already names another index; optional aliases (`latest`, and
`latest-runtime`). The same lock gives the same images wherever it is built, so a second publish
of it finds each tag already naming its index and moves none. Each index newly put gets its
provenance (execute.attestation) as an OCI 1.1 referrer: through the referrers API where the
registry has one, else the referrers tag schema (`sha256-<index digest>`, an index of referrers).
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from builder.engine import Engine
from builder.engine.registry_api import OCI_INDEX, OCI_MANIFEST, RegistryClient, index_body
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


def publish(
    images: Mapping[Arch, Mapping[str, str]],
    lock: Lock,
    release: str,
    target: str,
    aliases: Sequence[str],
    engine: Engine,
    client: RegistryClient,
    built: BuildRecord,
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
        # The index by digest, then its provenance, then the tags: a publish that fails in between
        # leaves no tag naming an index without provenance, and the next one attaches it.
        client.put_manifest(repository, ours, body, OCI_INDEX)
        if not _attested(client, repository, ours):
            pushed.append(attest(client, f"{registry}/{repository}", body, lock, built))
        for tag in (release + suffix, immutable + suffix, *(alias + suffix for alias in aliases)):
            existing = client.manifest(repository, tag)
            if existing is not None and existing.digest == ours:  # published before, from this lock: not moved
                pushed.append(Pushed(f"{registry}/{repository}:{tag}", ours, f"index of {platforms}, already there"))
                continue
            digest = client.put_manifest(repository, tag, body, OCI_INDEX)
            pushed.append(Pushed(f"{registry}/{repository}:{tag}", digest, f"index of {platforms}"))
    return pushed


def _attested(client: RegistryClient, repository: str, index: str) -> bool:
    """Whether the index already has a provenance referrer (published before, from this lock)."""
    return any(_is_provenance(entry) for entry in client.referrers(repository, index))


def _is_provenance(entry: dict[str, Any]) -> bool:
    annotations = entry.get("annotations")
    predicate = annotations.get(attestation.PREDICATE_ANNOTATION) if isinstance(annotations, dict) else None
    return entry.get("artifactType") == attestation.IN_TOTO and predicate == attestation.SLSA_PROVENANCE


def attest(client: RegistryClient, where: str, index: bytes, lock: Lock, built: BuildRecord) -> Pushed:
    """The index's provenance statement pushed as a referrer whose subject is the index."""
    repository = where.partition("/")[2]
    digest = f"sha256:{hashlib.sha256(index).hexdigest()}"
    manifests = [entry["digest"] for entry in json.loads(index)["manifests"]]
    now = datetime.datetime.now(datetime.timezone.utc)
    document = attestation.statement(where, manifests, lock, built.origin, built.started, now)
    layer = client.put_blob(repository, document)
    client.put_blob(repository, b"{}")  # the empty config every artifact manifest names
    subject = {"mediaType": OCI_INDEX, "digest": digest, "size": len(index)}
    body = attestation.referrer_manifest(layer, len(document), subject)
    referrer = client.put_manifest(repository, f"sha256:{hashlib.sha256(body).hexdigest()}", body, OCI_MANIFEST)
    if not client.has_referrers_api(repository, digest):
        _add_to_referrers_tag(client, repository, digest, {"digest": referrer, "size": len(body)})
    return Pushed(f"{where}@{referrer}", referrer, f"provenance of {digest[:19]}")


def _add_to_referrers_tag(client: RegistryClient, repository: str, subject: str, referrer: dict[str, Any]) -> None:
    """The referrers tag schema (OCI distribution 1.1, for registries without the API): the tag
    sha256-<subject hex> names an index of the subject's referrers; this one added to it."""
    tag = subject.replace(":", "-")
    entries = [e for e in client.referrers(repository, subject) if e.get("digest") != referrer["digest"]]
    entry = {
        "mediaType": OCI_MANIFEST,
        **referrer,
        "artifactType": attestation.IN_TOTO,
        "annotations": {attestation.PREDICATE_ANNOTATION: attestation.SLSA_PROVENANCE},
    }
    client.put_manifest(repository, tag, index_body([*entries, entry]), OCI_INDEX)
