"""OCI 1.1 referrers through the distribution API: what refers to a manifest (the referrers API where
the registry has it, else the referrers tag schema, `sha256-<digest hex>` naming an index of them), a
document attached to a manifest as a referrer of its kind, and the documents of a kind read back."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import requests

from builder.engine.registry_api import OCI_INDEX, OCI_MANIFEST, Descriptor, RegistryClient, index_body, named_digest
from builder.engine.registry_transport import json_object

EMPTY_CONFIG = {  # the OCI 1.1 empty descriptor: an artifact manifest with no config of its own
    "mediaType": "application/vnd.oci.empty.v1+json",
    "digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
    "size": 2,
}


@dataclass(frozen=True)
class ArtifactKind:
    """A kind of artifact attached as a referrer: its one layer's media type, which is also the referrer's
    artifactType, and the annotations that tell it from others of that media type."""

    media_type: str
    annotations: Mapping[str, str]

    def names(self, entry: Mapping[str, Any]) -> bool:
        """Whether a referrers index entry is an artifact of this kind."""
        annotations = entry.get("annotations")
        given = annotations if isinstance(annotations, dict) else {}
        return entry.get("artifactType") == self.media_type and all(
            given.get(key) == value for key, value in self.annotations.items()
        )

    def fields(self) -> dict[str, Any]:
        """What a referrer of this kind and its entry in a referrers index both carry."""
        return {
            "artifactType": self.media_type,
            **({"annotations": dict(self.annotations)} if self.annotations else {}),
        }


def referrer_manifest(kind: ArtifactKind, layer_digest: str, layer_size: int, subject: Descriptor) -> bytes:
    """An OCI 1.1 artifact manifest holding one document (its one layer) whose subject is that manifest:
    nothing in it varies but the document, so the same document attached again is the same referrer."""
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        **kind.fields(),
        "config": EMPTY_CONFIG,
        "layers": [{"mediaType": kind.media_type, "digest": layer_digest, "size": layer_size}],
        "subject": subject.subject(),
    }
    return json.dumps(manifest, indent=2).encode()


class Referrers:
    """The referrers of the manifests one registry client reaches."""

    def __init__(self, client: RegistryClient) -> None:
        self.client = client

    def attach(self, repository: str, subject: Descriptor, kind: ArtifactKind, document: bytes) -> str:
        """Attach document to subject as an OCI 1.1 referrer of this kind; the referrer's digest. Where the
        registry has no referrers API (distribution 2.8), the referrer is added to the referrers tag's index."""
        layer = self.client.put_blob(repository, document)
        self.client.put_blob(repository, b"{}")  # the empty config every artifact manifest names
        body = referrer_manifest(kind, layer, len(document), subject)
        referrer = self.client.put_manifest(
            repository, f"sha256:{hashlib.sha256(body).hexdigest()}", body, OCI_MANIFEST
        )
        if not self.has_api(repository, subject.digest):
            # The referrers tag schema (OCI distribution 1.1): the tag sha256-<subject hex> names an index
            # of the subject's referrers, each entry with the referrer's artifactType and annotations.
            entries = [e for e in self.of(repository, subject.digest) if e.get("digest") != referrer]
            entry = {"mediaType": OCI_MANIFEST, "digest": referrer, "size": len(body), **kind.fields()}
            tag = subject.digest.replace(":", "-")
            self.client.put_manifest(repository, tag, index_body([*entries, entry]), OCI_INDEX)
        return referrer

    def attached(self, repository: str, digest: str, kind: ArtifactKind) -> list[tuple[str, bytes]]:
        """The documents of this kind attached to digest, each with its referrer's digest."""
        client, found = self.client, []
        for entry in filter(kind.names, self.of(repository, digest)):
            referrer = named_digest(entry.get("digest"), client.registry, f"{repository}@{digest}")
            manifest = client.manifest(repository, referrer)
            layers = json_object(manifest.body, client.registry).get("layers", []) if manifest is not None else []
            for layer in layers if isinstance(layers, list) else []:
                if isinstance(layer, dict) and layer.get("mediaType") == kind.media_type:
                    blob = named_digest(layer.get("digest"), client.registry, f"{repository}@{referrer}")
                    found.append((referrer, client.blob(repository, blob)))
        return found

    def of(self, repository: str, digest: str) -> list[dict[str, Any]]:
        """The descriptors of what refers to digest: the referrers API's index, else the referrers tag's."""
        response = self._api(repository, digest)
        if response is not None:
            found = json_object(response.content, self.client.registry).get("manifests", [])
        else:
            tagged = self.client.manifest(repository, digest.replace(":", "-"))
            found = json_object(tagged.body, self.client.registry).get("manifests", []) if tagged is not None else []
        return [entry for entry in found if isinstance(entry, dict)]

    def has_api(self, repository: str, digest: str) -> bool:
        """Whether the registry answers the OCI 1.1 referrers API (else: the referrers tag schema)."""
        return self._api(repository, digest) is not None

    def _api(self, repository: str, digest: str) -> requests.Response | None:
        """The referrers API's answer for digest, or None where the registry has no such API."""
        response = self.client.transport.send("GET", repository, f"referrers/{digest}", {"Accept": OCI_INDEX})
        ok = response.status_code == 200 and response.headers.get("Content-Type", "").startswith(OCI_INDEX)
        return response if ok else None
