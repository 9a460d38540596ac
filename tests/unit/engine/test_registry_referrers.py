"""OCI 1.1 referrers against an in-memory registry without the referrers API (tests.fake_registry), as
Debian's docker-registry is: documents attached through the referrers tag schema and read back by kind,
and a digest the registry names checked by its shape before it is asked for. (The real registry:
tests/docker/test_attestation.py.)"""

from __future__ import annotations

import hashlib
import json

import pytest

from builder.engine.protocol import EngineError
from builder.engine.registry_api import OCI_INDEX, OCI_MANIFEST, RegistryClient, index_body
from builder.engine.registry_referrers import EMPTY_CONFIG, ArtifactKind, Referrers
from builder.model.retry import RetryPolicy
from tests.fake_registry import Store, server
from tests.unit.engine.test_registry_api import _image

PROVENANCE = ArtifactKind(
    "application/vnd.in-toto+json", {"in-toto.io/predicate-type": "https://slsa.dev/provenance/v1"}
)
SBOM = ArtifactKind("application/vnd.cyclonedx+json", {})


def test_artifacts_are_attached_through_the_referrers_tag_and_read_back_by_kind() -> None:
    store = Store()
    with server(store.answer) as (address, _):
        client = RegistryClient(address, {}, RetryPolicy(attempts=1))
        image = _image(client, "amd64")
        statement, sbom = b'{"statement": 1}', b'{"bomFormat": "CycloneDX"}'
        first = Referrers(client).attach("team/x", image, PROVENANCE, statement)
        second = Referrers(client).attach("team/x", image, SBOM, sbom)
        tagged = store.manifests[("team/x", image.digest.replace(":", "-"))]  # no referrers API: the tag schema
        assert tagged[0] == OCI_INDEX
        entries = json.loads(tagged[1])["manifests"]
        assert [(e["digest"], e["artifactType"], e.get("annotations")) for e in entries] == [
            (first, PROVENANCE.media_type, dict(PROVENANCE.annotations)),
            (second, SBOM.media_type, None),
        ]
        artifact = json.loads(store.manifests[("team/x", second)][1])
        assert artifact["config"] == EMPTY_CONFIG and store.blobs[str(EMPTY_CONFIG["digest"])] == b"{}"
        assert artifact["subject"] == {"mediaType": OCI_MANIFEST, "digest": image.digest, "size": image.size}
        assert artifact["layers"] == [
            {"mediaType": SBOM.media_type, "digest": f"sha256:{hashlib.sha256(sbom).hexdigest()}", "size": len(sbom)}
        ]
        assert Referrers(client).attached("team/x", image.digest, SBOM) == [(second, sbom)]
        assert Referrers(client).attached("team/x", image.digest, PROVENANCE) == [(first, statement)]
        # The same document again is the same referrer: the referrers tag's index does not change.
        assert Referrers(client).attach("team/x", image, SBOM, sbom) == second
        assert store.manifests[("team/x", image.digest.replace(":", "-"))] == tagged
        assert Referrers(client).attached("team/x", _image(client, "arm64").digest, SBOM) == []


def test_a_digest_the_registry_names_must_be_a_digest_before_it_is_asked_for() -> None:
    store = Store()
    with server(store.answer) as (address, seen):
        client = RegistryClient(address, {}, RetryPolicy(attempts=1))
        image = _image(client, "amd64")
        entry = {
            "mediaType": OCI_MANIFEST,
            "digest": "sha256:../../../v2/other/manifests/x",
            "size": 1,
            **SBOM.fields(),
        }
        store.put("team/x", image.digest.replace(":", "-"), OCI_INDEX, index_body([entry]))
        with pytest.raises(EngineError, match=r"named 'sha256:\.\./\.\./\.\./v2/other/manifests/x' in team/x@sha256:"):
            Referrers(client).attached("team/x", image.digest, SBOM)
        assert not [line for line in seen if "other" in line]
