"""What a publish put beside an image, read back from an in-memory registry (tests.fake_registry): the
provenance and the SBOM of the manifest of the architecture asked for (and provenance an earlier release
attached to the index), what `inspect` shows of them, and `stackbuild sbom TAG` printing the published
SBOM, or making one from the image when none is published or it cannot be read. (The real registry:
tests/docker/test_attestation.py and test_publish.py.)"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterator

import pytest

from builder.cli import handing
from builder.cli.context import Context
from builder.engine import Engine
from builder.engine.protocol import EngineError
from builder.engine.registry_api import OCI_INDEX, OCI_MANIFEST, Descriptor, RegistryClient, index_body
from builder.engine.registry_referrers import Referrers
from builder.execute import attestation
from builder.handoff.published import beside, registry_ref
from builder.inputs.project import Origin
from builder.model.arch import Arch
from builder.model.retry import RetryPolicy
from tests.fake_engine import FakeEngine
from tests.fake_registry import Store, server
from tests.helpers import run_cli
from tests.unit.handoff.test_handoff import REFERENCE, holding

WHEN = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)


def cyclonedx(marker: str) -> str:
    """A CycloneDX 1.6 document the schema takes, told apart by its serial number."""
    serial = f"urn:uuid:{marker * 8}-{marker * 4}-{marker * 4}-{marker * 4}-{marker * 12}"
    return json.dumps({"bomFormat": "CycloneDX", "specVersion": "1.6", "serialNumber": serial, "version": 1})


def statement(digest: str, origin: str) -> bytes:
    return attestation.statement("r/team/x", [digest], REFERENCE, Origin(origin, "a" * 40), WHEN, WHEN)


@pytest.fixture
def published() -> Iterator[tuple[str, RegistryClient, dict[Arch, Descriptor], Descriptor]]:
    """team/x:1.0, an index of an amd64 and an arm64 image, each with its provenance and SBOM attached, as
    publish leaves them; its address, a client, the images and the index."""
    store = Store()
    with server(store.answer) as (address, _):
        client = RegistryClient(address, {}, RetryPolicy(attempts=1))
        images = {}
        for arch in (Arch.X86_64, Arch.AARCH64):
            body = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "arch": arch.value}).encode()
            image = client.manifest("team/x", client.put_manifest("team/x", f"1.0-{arch}", body, OCI_MANIFEST))
            assert image is not None
            Referrers(client).attach(
                "team/x", image, attestation.PROVENANCE, statement(image.digest, f"https://{arch}.example")
            )
            Referrers(client).attach(
                "team/x", image, attestation.SBOM, cyclonedx("1" if arch is Arch.X86_64 else "2").encode()
            )
            images[arch] = image
        body = index_body([images[arch].entry(arch) for arch in images])
        client.put_manifest("team/x", "1.0", body, OCI_INDEX)
        index = client.manifest("team/x", "1.0")
        assert index is not None
        yield address, client, images, index


def test_the_provenance_and_sbom_are_those_of_the_architectures_manifest_then_the_indexs_provenance(
    published: tuple[str, RegistryClient, dict[Arch, Descriptor], Descriptor],
) -> None:
    address, client, images, index = published
    for arch, marker in ((Arch.X86_64, "1"), (Arch.AARCH64, "2")):
        found = beside(f"{address}/team/x:1.0", arch, None, client)
        assert found is not None and found.subjects == (images[arch], index)
        (shown,) = found.provenance()
        assert shown["subject"][0]["digest"]["sha256"] == images[arch].digest.removeprefix("sha256:")
        assert found.sbom() == cyclonedx(marker)
    # An earlier release attached the provenance to the index: it is read after the image's own.
    Referrers(client).attach(
        "team/x", index, attestation.PROVENANCE, statement(images[Arch.X86_64].digest, "https://old.example")
    )
    found = beside(f"{address}/team/x:1.0", Arch.X86_64, None, client)
    assert found is not None
    origins = [s["predicate"]["buildDefinition"]["resolvedDependencies"][-1]["uri"] for s in found.provenance()]
    assert origins == ["git+https://x86_64.example", "git+https://old.example"]
    # A per-architecture tag names the image itself; a local image and a tag the registry lacks, nothing.
    alone = beside(f"{address}/team/x:1.0-aarch64", Arch.X86_64, None, client)
    assert alone is not None and alone.subjects == (images[Arch.AARCH64],) and alone.sbom() == cyclonedx("2")
    assert beside("stackbuild/reference:1.0", Arch.X86_64, None, client) is None
    assert beside(f"{address}/team/x:2.0", Arch.X86_64, None, client) is None


def test_an_sbom_the_schema_refuses_is_said_unreadable_by_its_referrer(
    published: tuple[str, RegistryClient, dict[Arch, Descriptor], Descriptor],
) -> None:
    address, client, _, _ = published
    body = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "arch": "other"}).encode()
    image = client.manifest("team/x", client.put_manifest("team/x", "other", body, OCI_MANIFEST))
    assert image is not None
    referrer = Referrers(client).attach("team/x", image, attestation.SBOM, b'{"bomFormat": "SPDX"}')
    found = beside(f"{address}/team/x:other", Arch.X86_64, None, client)
    assert found is not None
    with pytest.raises(EngineError, match=f"its SBOM {referrer}: .*does not validate against CycloneDX 1.6"):
        found.sbom()


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> list[str]:
    """The CLI on the fake engine, no Docker login; the images `image_sbom` was asked for."""
    engine = FakeEngine()
    made: list[str] = []

    def image_sbom(given: Engine, image: str, arch: Arch) -> str:
        made.append(image)
        return cyclonedx("9")

    monkeypatch.setattr(Context, "engine", lambda *_: engine)
    monkeypatch.setattr(handing, "image_sbom", image_sbom)
    monkeypatch.setenv("DOCKER_CONFIG", "/nonexistent")
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path))
    holding(engine, "local/x:1.0", REFERENCE)
    return made


def test_sbom_of_a_published_tag_prints_the_one_beside_it_and_of_any_other_makes_it_from_the_image(
    published: tuple[str, RegistryClient, dict[Arch, Descriptor], Descriptor],
    cli: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    address = published[0]
    code, out, _ = run_cli(capsys, "sbom", f"{address}/team/x:1.0", "--arch", "aarch64")
    assert (code, out.strip(), cli) == (0, cyclonedx("2"), [])  # the published one: the image not even pulled
    code, out, _ = run_cli(capsys, "sbom", "local/x:1.0", "--arch", "x86_64")
    assert (code, out.strip(), cli) == (0, cyclonedx("9"), ["local/x:1.0"])
    code, out, _ = run_cli(capsys, "sbom", f"{address}/team/x:2.0", "--arch", "x86_64")  # nothing published there
    assert (code, out.strip(), cli[-1]) == (0, cyclonedx("9"), f"{address}/team/x:2.0")


def test_sbom_made_from_the_image_when_the_published_one_cannot_be_read(
    cli: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    store = Store()
    store.put("team/x", "1.0", OCI_INDEX, b"[1, 2")  # not an index: the registry cannot be read
    with server(store.answer) as (address, _):
        code, out, err = run_cli(capsys, "sbom", f"{address}/team/x:1.0", "--arch", "x86_64")
    assert (code, out.strip(), cli) == (0, cyclonedx("9"), [f"{address}/team/x:1.0"])
    assert re.search(rf"the SBOM published beside {address}/team/x:1.0 cannot be read \(.*\): made from the image", err)


def test_inspect_of_a_published_tag_lists_its_provenance_and_its_sbom(
    published: tuple[str, RegistryClient, dict[Arch, Descriptor], Descriptor],
    cli: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    ref = f"{published[0]}/team/x:1.0"
    engine = Context.engine(None)  # type: ignore[arg-type]
    assert isinstance(engine, FakeEngine)
    holding(engine, ref, REFERENCE)
    code, out, err = run_cli(capsys, "inspect", ref, "--arch", "x86_64")
    assert code == 0, err
    assert re.search(r"^provenance    stackbuild \S+, from https://x86_64.example @ a{40}, finished ", out, re.M), out
    assert re.search(r"^sbom          CycloneDX 1\.6, 0 components \(`stackbuild sbom IMAGE` prints it\)$", out, re.M)
    code, out, _ = run_cli(capsys, "inspect", ref, "--arch", "x86_64", "--json")
    shown = json.loads(out)
    assert code == 0 and shown["sbom"] == json.loads(cyclonedx("1")) and len(shown["provenance"]) == 1
    assert "attestations_unreadable" not in shown


def test_only_a_reference_that_names_a_registry_is_asked_for_its_provenance() -> None:
    assert registry_ref("127.0.0.1:5000/team/reftest:lock-0123") == ("127.0.0.1:5000", "team/reftest", "lock-0123")
    assert registry_ref("registry.example/team/x:8.5.0-910b") == ("registry.example", "team/x", "8.5.0-910b")
    assert registry_ref("localhost/team/x:latest") == ("localhost", "team/x", "latest")
    for local in ("stackbuild/stage/toolkit:abc", "ubuntu:22.04", "team/x", "registry.example/team/x"):
        assert registry_ref(local) is None, local
