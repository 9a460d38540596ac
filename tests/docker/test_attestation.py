"""What goes beside a published image: attached to a real registry (Debian's docker-registry,
distribution 2.8, which has no referrers API), the provenance statement and the SBOM are OCI 1.1
referrers of the image's manifest found through the referrers tag schema, read back with skopeo and
the distribution API, the statement parsed by the in-toto bindings; the index itself lists only the
images. (A whole publish: test_publish.py.)"""

from __future__ import annotations

import datetime
import hashlib
import json
import shutil
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from builder import lock as lock_io
from builder.engine.registry_api import OCI_INDEX, OCI_MANIFEST, Descriptor, RegistryClient, index_body
from builder.engine.registry_referrers import Referrers
from builder.execute import attestation
from builder.execute.publish import BuildRecord, Image, beside
from builder.handoff import published
from builder.inputs.project import Origin
from builder.model.arch import Arch
from tests.conftest import ROOT
from tests.helpers import registry

pytestmark = pytest.mark.docker  # it needs Debian's docker-registry, set up with the Docker tier

SBOM = json.dumps({"bomFormat": "CycloneDX", "specVersion": "1.6", "version": 1, "components": []})


def _image(client: RegistryClient, repository: str, marker: str) -> Descriptor:
    """A stand-in platform manifest (an empty config and one layer) pushed to the registry."""
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
    found = client.manifest(
        repository, client.put_manifest(repository, f"sha256:{hashlib.sha256(body).hexdigest()}", body, OCI_MANIFEST)
    )
    assert found is not None
    return found


def _skopeo_raw(reference: str) -> dict[str, Any]:
    assert shutil.which("skopeo")
    raw = subprocess.run(
        ["skopeo", "inspect", "--raw", "--tls-verify=false", f"docker://{reference}"],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    found: dict[str, Any] = json.loads(raw)
    return found


def test_the_provenance_and_the_sbom_are_referrers_of_each_image_through_the_referrers_tag(tmp_path: Path) -> None:
    locked = lock_io.read(ROOT / "lockfiles" / "8.5.0.lock.json")
    origin = Origin("https://git.example.com/team/stacks.git", "a" * 40)
    with registry(tmp_path / "registry") as address:
        client = RegistryClient(address, {})
        repository = "team/attested"
        images = {
            Arch.X86_64: _image(client, repository, "amd64 image"),
            Arch.AARCH64: _image(client, repository, "arm64 image"),
        }
        entries = [image.entry(arch) for arch, image in images.items()]
        index = index_body(entries)
        client.put_manifest(repository, "lock-0123", index, OCI_INDEX)
        started = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)
        record = BuildRecord(origin, started)
        for arch, image in images.items():
            pushed = beside(
                client, f"{address}/{repository}", Image(image, f"local/{arch}", arch), locked, record, lambda: SBOM
            )
            assert [p.what.split(" of ")[0] for p in pushed] == ["provenance", "SBOM"]
            assert not Referrers(client).has_api(repository, image.digest)

            # The referrers tag schema's tag for the image: an index of its two referrers.
            referrers = _skopeo_raw(f"{address}/{repository}:{image.digest.replace(':', '-')}")
            assert referrers["mediaType"] == OCI_INDEX
            provenance, sbom = referrers["manifests"]
            assert [provenance["digest"], sbom["digest"]] == [p.digest for p in pushed]
            assert provenance["artifactType"] == attestation.IN_TOTO
            assert sbom["artifactType"] == "application/vnd.cyclonedx+json"
            documents = {}
            for entry in (provenance, sbom):
                artifact = _skopeo_raw(f"{address}/{repository}@{entry['digest']}")
                assert artifact["subject"] == image.subject() and artifact["artifactType"] == entry["artifactType"]
                layer = artifact["layers"][0]
                url = f"http://{address}/v2/{repository}/blobs/{layer['digest']}"
                with urllib.request.urlopen(url, timeout=30) as answer:
                    documents[entry["artifactType"]] = answer.read()
            assert documents["application/vnd.cyclonedx+json"].decode() == SBOM
            document = attestation.read_statement(documents[attestation.IN_TOTO])
            assert [s["digest"]["sha256"] for s in document["subject"]] == [image.digest.removeprefix("sha256:")]

            # What `inspect` and `stackbuild sbom` read of the published image: the same two, checked.
            found = published.beside(f"{address}/{repository}:lock-0123", arch, None, client)
            assert found is not None and found.provenance() == [document] and found.sbom() == SBOM
            (line,) = published.provenance_lines(found.provenance())
            assert "from https://git.example.com/team/stacks.git @ " + "a" * 40 in line
            # Attached once: a second publish of the same images attaches nothing.
            assert beside(client, f"{address}/{repository}", Image(image, "", arch), locked, record, lambda: "") == []
        # The index itself: only the two images, nothing of the attestations, and no referrer of its own.
        again = client.manifest(repository, "lock-0123")
        assert again is not None and json.loads(again.body)["manifests"] == entries
        assert Referrers(client).of(repository, again.digest) == []
    definition = document["predicate"]["buildDefinition"]
    assert definition["externalParameters"]["lock_sha256"] == locked.lock_sha256
    commits = {d["name"]: d["digest"]["gitCommit"] for d in definition["resolvedDependencies"]}
    catlass = getattr(locked.component("catlass").source, "commit", None)
    assert commits["checkout"] == "a" * 40 and commits["catlass"] == catlass
    assert document["predicate"]["runDetails"]["metadata"]["startedOn"] == "2026-12-01T00:00:00Z"
