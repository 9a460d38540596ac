"""publish's core on the fake engine and an in-memory registry on loopback that answers the distribution
API as Debian's docker-registry does (no referrers API): what it pushes and puts, that a second publish
of the same lock moves nothing, that an immutable tag is never moved, and the provenance referrer.
(The real registry and engine: tests/docker/test_publish.py and test_attestation.py.)"""

from __future__ import annotations

import datetime
import hashlib
import http.server
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from builder.engine.registry_api import OCI_INDEX, OCI_MANIFEST, RegistryClient
from builder.execute import attestation
from builder.execute.publish import BuildRecord, Pushed, immutable_tag, publish
from builder.inputs.project import Origin
from builder.lock.locked import Lock
from builder.model.arch import Arch
from builder.model.errors import StackbuildError
from builder.model.retry import RetryPolicy
from tests.fake_engine import FakeEngine
from tests.golden_plan import golden_lock, golden_request
from tests.unit.engine.test_registry_api import Answer, server

ROUTE = re.compile(r"^/v2/(?P<repository>.+)/(?P<kind>manifests|blobs|referrers)/(?P<rest>[^?]*)(\?digest=(?P<d>.+))?$")


@dataclass
class Store:
    """What the registry holds: manifests by repository and reference (tag or digest), blobs by digest."""

    manifests: dict[tuple[str, str], tuple[str, bytes]] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)
    puts: list[str] = field(default_factory=list)  # "repository:reference" of every manifest put

    def put(self, repository: str, reference: str, media_type: str, body: bytes) -> str:
        digest = f"sha256:{hashlib.sha256(body).hexdigest()}"
        self.manifests[(repository, reference)] = self.manifests[(repository, digest)] = (media_type, body)
        return digest

    def answer(self, request: http.server.BaseHTTPRequestHandler) -> Answer:
        if request.path == "/v2/" or (route := ROUTE.match(request.path)) is None:
            return 200, {}, b"{}"
        repository, kind, rest = route["repository"], route["kind"], route["rest"]
        if kind == "manifests" and request.command == "PUT":
            self.puts.append(f"{repository}:{rest}")
            digest = self.put(repository, rest, request.headers["Content-Type"], request.body)  # type: ignore[attr-defined]
            return 201, {"Docker-Content-Digest": digest}, b""
        if kind == "manifests" and (repository, rest) in self.manifests:
            media_type, body = self.manifests[(repository, rest)]
            return 200, {"Content-Type": media_type}, body
        if kind == "blobs" and request.command == "POST":
            return 202, {"Location": f"/v2/{repository}/blobs/uploads/1"}, b""
        if kind == "blobs" and rest.startswith("uploads/"):
            self.blobs[route["d"].replace("%3A", ":")] = request.body  # type: ignore[attr-defined]
            return 201, {}, b""
        if kind == "blobs" and rest in self.blobs:
            return 200, {}, self.blobs[rest]
        return 404, {}, b'{"errors": [{"code": "MANIFEST_UNKNOWN"}]}'


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


def published(address: str, lock: Lock, engine: PushingEngine) -> list[Pushed]:
    client = RegistryClient(address, credentials={}, retry=RetryPolicy(attempts=1))
    return publish(IMAGES, lock, "1.0", f"{address}/team", ["latest"], engine, client, BUILT)


def test_each_tag_names_an_index_of_both_architectures_with_its_provenance_and_a_second_publish_moves_none(
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
    # The provenance of each index, through the referrers tag (no referrers API here).
    for suffix in ("", "-runtime"):
        index_digest = "sha256:" + hashlib.sha256(store.manifests[(repository, f"1.0{suffix}")][1]).hexdigest()
        referrers = json.loads(store.manifests[(repository, index_digest.replace(":", "-"))][1])["manifests"]
        (entry,) = referrers
        assert entry["artifactType"] == attestation.IN_TOTO
        artifact = json.loads(store.manifests[(repository, entry["digest"])][1])
        assert artifact["subject"]["digest"] == index_digest
        statement = json.loads(store.blobs[artifact["layers"][0]["digest"]])
        subjects = {f"sha256:{s['digest']['sha256']}" for s in statement["subject"]}
        assert subjects == {
            m["digest"] for m in json.loads(store.manifests[(repository, index_digest)][1])["manifests"]
        }
    puts = len(store.puts)
    second = published(address, lock, engine)
    assert {p.what for p in second if p.ref.rsplit(":", 1)[1] in tags} == {"index of aarch64, x86_64, already there"}
    assert not [p for p in second if p.what.startswith("provenance")]  # attested once
    assert [put for put in store.puts[puts:] if put.rsplit(":", 1)[1] in tags] == []


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
