"""Provenance beside the image: published to a real registry (Debian's docker-registry, distribution
2.8, which has no referrers API), the statement is an OCI 1.1 referrer of the index found through the
referrers tag schema, read back with skopeo and the distribution API, and parsed by the in-toto
bindings; the index itself lists only the images."""

from __future__ import annotations

import datetime
import hashlib
import json
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from builder import lock as lock_io
from builder.engine.registry_api import OCI_INDEX, OCI_MANIFEST, RegistryClient, index_body
from builder.execute import attestation
from builder.execute.publish import BuildRecord, attest
from builder.handoff.published_provenance import provenance_lines, published_provenance
from builder.inputs.project import Origin
from tests.conftest import ROOT
from tests.helpers import registry

pytestmark = pytest.mark.docker  # it needs Debian's docker-registry, set up with the Docker tier


def _image(client: RegistryClient, repository: str, marker: str) -> dict[str, object]:
    """A stand-in platform manifest (an empty config and one layer) pushed to the registry; its index entry."""
    config = client.put_blob(repository, b"{}")
    layer = client.put_blob(repository, marker.encode())
    body = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": config, "size": 2},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer, "size": len(marker)}],
        }
    ).encode()
    digest = client.put_manifest(repository, f"sha256:{hashlib.sha256(body).hexdigest()}", body, OCI_MANIFEST)
    return {"mediaType": OCI_MANIFEST, "digest": digest, "size": len(body)}


def test_the_provenance_is_a_referrer_of_the_index_through_the_referrers_tag(tmp_path: Path) -> None:
    locked = lock_io.read(ROOT / "lockfiles" / "8.5.0.lock.json")
    origin = Origin("https://git.example.com/team/stacks.git", "a" * 40)
    with registry(tmp_path / "registry") as address:
        client = RegistryClient(address, {})
        repository = "team/attested"
        entries = [_image(client, repository, "amd64 image"), _image(client, repository, "arm64 image")]
        index = index_body(entries)
        client.put_manifest(repository, "lock-0123", index, OCI_INDEX)
        started = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)
        pushed = attest(client, f"{address}/{repository}", index, locked, BuildRecord(origin, started))
        assert not client.has_referrers_api(repository, f"sha256:{hashlib.sha256(index).hexdigest()}")

        subject = f"sha256:{hashlib.sha256(index).hexdigest()}"
        assert shutil.which("skopeo")
        tag = subject.replace(":", "-")  # the referrers tag schema's tag for the index
        raw = subprocess.run(
            ["skopeo", "inspect", "--raw", "--tls-verify=false", f"docker://{address}/{repository}:{tag}"],
            capture_output=True, text=True, timeout=120, check=True,
        ).stdout  # fmt: skip
        referrers = json.loads(raw)
        assert referrers["mediaType"] == OCI_INDEX
        (entry,) = referrers["manifests"]
        assert entry["artifactType"] == attestation.IN_TOTO and entry["digest"] == pushed.digest
        manifest = client.manifest(repository, entry["digest"])
        assert manifest is not None
        artifact = json.loads(manifest.body)
        assert artifact["subject"]["digest"] == subject and artifact["artifactType"] == attestation.IN_TOTO
        url = f"http://{address}/v2/{repository}/blobs/{artifact['layers'][0]['digest']}"
        with urllib.request.urlopen(url, timeout=30) as answer:
            document = attestation.read_statement(answer.read())
        # The index itself: only the two images, nothing of the attestation.
        again = client.manifest(repository, "lock-0123")
        assert again is not None and json.loads(again.body)["manifests"] == entries
        # What `inspect` shows of a published image: the statement, read back and checked.
        (shown,) = published_provenance(f"{address}/{repository}:lock-0123", None, client)
        assert shown == document
        (line,) = provenance_lines([shown])
        assert "from https://git.example.com/team/stacks.git @ " + "a" * 40 in line
    subjects = {s["digest"]["sha256"] for s in document["subject"]}
    assert subjects == {str(e["digest"]).removeprefix("sha256:") for e in entries}
    definition = document["predicate"]["buildDefinition"]
    assert definition["externalParameters"]["lock_sha256"] == locked.lock_sha256
    commits = {d["name"]: d["digest"]["gitCommit"] for d in definition["resolvedDependencies"]}
    catlass = getattr(locked.component("catlass").source, "commit", None)
    assert commits["checkout"] == "a" * 40 and commits["catlass"] == catlass
    assert document["predicate"]["runDetails"]["metadata"]["startedOn"] == "2026-12-01T00:00:00Z"
