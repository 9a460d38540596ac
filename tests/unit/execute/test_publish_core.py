"""publish's core on the fake engine and an in-memory registry on loopback that answers the distribution
API as Debian's docker-registry does (no referrers API): what it pushes and puts, that a second publish
of the same lock moves nothing, that an immutable tag is never moved, and each image's provenance and
SBOM referrers.
(The real registry and engine: tests/docker/test_publish.py and test_attestation.py.)"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Iterator

import pytest

from builder.engine import Engine
from builder.engine.registry_api import OCI_INDEX, OCI_MANIFEST, RegistryClient
from builder.execute import attestation
from builder.execute.publish import BuildRecord, Pushed, immutable_tag, publish
from builder.inputs.project import Origin
from builder.lock.locked import Lock
from builder.model.arch import Arch
from builder.model.errors import StackbuildError
from builder.model.retry import RetryPolicy
from tests.fake_engine import FakeEngine
from tests.fake_registry import Store, server
from tests.golden_plan import golden_lock, golden_request


class PushingEngine(FakeEngine):
    """Pushing an image puts a manifest of its own into the store, as `docker push` would."""

    def __init__(self, store: Store, repository: str) -> None:
        super().__init__()
        self.store, self.repository = store, repository

    def push(self, image_id: str, ref: str) -> str:
        super().push(image_id, ref)
        body = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": {"digest": image_id}}).encode()
        return self.store.put(self.repository, ref.rsplit(":", 1)[1], OCI_MANIFEST, body)


@pytest.fixture
def lock() -> Lock:
    return golden_lock(golden_request().manifest).sealed()


@pytest.fixture
def registry(lock: Lock) -> Iterator[tuple[str, Store, PushingEngine]]:
    store = Store()
    with server(store.answer) as (address, _):
        yield address, store, PushingEngine(store, f"team/{lock.stack.lower()}")


IMAGES = {
    arch: {"runtime-image": f"local/{arch.value}:runtime", "devel-image": f"local/{arch.value}:devel"}
    for arch in (Arch.X86_64, Arch.AARCH64)
}
BUILT = BuildRecord(Origin(), datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc))


def published(address: str, lock: Lock, engine: PushingEngine, made: list[str] | None = None) -> list[Pushed]:
    """publish, the SBOMs it makes recorded in made (a stand-in for handoff.sbom.image_sbom's)."""

    def sbom_of(given: Engine, image: str, arch: Arch) -> str:
        assert given is engine
        (made if made is not None else []).append(image)
        return json.dumps({"bomFormat": "CycloneDX", "image": image, "arch": arch.value})

    client = RegistryClient(address, credentials={}, retry=RetryPolicy(attempts=1))
    return publish(IMAGES, lock, "1.0", f"{address}/team", ["latest"], engine, client, BUILT, sbom_of)


def test_each_tag_names_an_index_of_both_architectures_and_a_second_publish_moves_none(
    registry: tuple[str, Store, PushingEngine], lock: Lock
) -> None:
    address, store, engine = registry
    repository = f"team/{lock.stack.lower()}"
    first = published(address, lock, engine)
    immutable = immutable_tag(lock)
    tags = {f"{t}{s}" for t in ("1.0", immutable, "latest") for s in ("", "-runtime")}
    assert {p.ref.rsplit(":", 1)[1] for p in first if p.what.startswith("index of")} == tags
    assert sorted(engine.pushed) == sorted(
        f"{address}/{repository}:1.0{suffix}-{arch}" for suffix in ("", "-runtime") for arch in ("x86_64", "aarch64")
    )
    media_type, body = store.manifests[(repository, "1.0-runtime")]
    index = json.loads(body)
    assert media_type == OCI_INDEX
    assert [(m["platform"]["architecture"], m["platform"].get("variant")) for m in index["manifests"]] == [
        ("arm64", "v8"),
        ("amd64", None),
    ]
    puts = len(store.puts)
    made: list[str] = []
    second = published(address, lock, engine, made)
    assert {p.what for p in second if p.ref.rsplit(":", 1)[1] in tags} == {"index of aarch64, x86_64, already there"}
    assert [put for put in store.puts[puts:] if put.rsplit(":", 1)[1] in tags] == []
    assert not [p for p in second if p.what.startswith(("provenance", "SBOM"))] and made == []  # attached once


def referrers(store: Store, repository: str, digest: str) -> list[dict[str, object]]:
    """The entries of digest's referrers tag (the referrers tag schema: no referrers API here)."""
    entries: list[dict[str, object]] = json.loads(store.manifests[(repository, digest.replace(":", "-"))][1])[
        "manifests"
    ]
    return entries


def test_each_image_manifest_has_its_provenance_and_its_sbom_as_referrers_and_the_index_none(
    registry: tuple[str, Store, PushingEngine], lock: Lock
) -> None:
    address, store, engine = registry
    repository = f"team/{lock.stack.lower()}"
    made: list[str] = []
    pushed = published(address, lock, engine, made)
    assert sorted(made) == sorted(image for finals in IMAGES.values() for image in finals.values())
    for suffix in ("", "-runtime"):
        index_digest = "sha256:" + hashlib.sha256(store.manifests[(repository, f"1.0{suffix}")][1]).hexdigest()
        assert (repository, index_digest.replace(":", "-")) not in store.manifests  # the index: nothing beside it
        for entry in json.loads(store.manifests[(repository, index_digest)][1])["manifests"]:
            image = entry["digest"]
            provenance, sbom = referrers(store, repository, image)
            assert provenance["artifactType"] == attestation.IN_TOTO
            assert provenance["annotations"] == {attestation.PREDICATE_ANNOTATION: attestation.SLSA_PROVENANCE}
            assert sbom["artifactType"] == "application/vnd.cyclonedx+json" and "annotations" not in sbom
            documents = {}
            for referrer in (provenance, sbom):
                artifact = json.loads(store.manifests[(repository, str(referrer["digest"]))][1])
                assert artifact["subject"] == {"mediaType": OCI_MANIFEST, "digest": image, "size": entry["size"]}
                assert artifact["artifactType"] == referrer["artifactType"]
                (layer,) = artifact["layers"]
                assert layer["mediaType"] == referrer["artifactType"]
                documents[referrer["artifactType"]] = json.loads(store.blobs[layer["digest"]])
                assert any(p.digest == referrer["digest"] for p in pushed)
            statement = documents[attestation.IN_TOTO]
            assert [f"sha256:{s['digest']['sha256']}" for s in statement["subject"]] == [image]
            arch = "aarch64" if entry["platform"]["architecture"] == "arm64" else "x86_64"
            final = "runtime-image" if suffix else "devel-image"
            assert documents["application/vnd.cyclonedx+json"]["image"] == IMAGES[Arch(arch)][final]


def test_an_immutable_tag_naming_another_index_is_refused_before_any_index_tag_moves(
    registry: tuple[str, Store, PushingEngine], lock: Lock
) -> None:
    address, store, engine = registry
    repository = f"team/{lock.stack.lower()}"
    store.put(repository, immutable_tag(lock), OCI_INDEX, b'{"schemaVersion": 2, "manifests": []}')
    with pytest.raises(StackbuildError, match=r"already names sha256:[0-9a-f]{64}, not this build's index"):
        published(address, lock, engine)
    index_tags = {f"{t}{s}" for t in ("1.0", "latest") for s in ("", "-runtime")}
    assert not [put for put in store.puts if put.rsplit(":", 1)[1] in index_tags]
    assert not [ref for (_, ref) in store.manifests if ref in index_tags]
