"""The provenance statement, built and read through the in-toto-attestation bindings: what it names,
and that a malformed one is refused by them (not by a hand-written check)."""

from __future__ import annotations

import datetime
import json

import pytest

from builder import lock as lock_io
from builder.execute import attestation
from builder.inputs.project import Origin
from tests.conftest import ROOT

WHEN = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc)
MANIFESTS = ["sha256:" + "1" * 64, "sha256:" + "2" * 64]


CHECKOUT = Origin("https://git.example.com/team/stacks.git", "a" * 40)


def _statement(origin: Origin = CHECKOUT) -> bytes:
    locked = lock_io.read(ROOT / "lockfiles" / "8.5.0.lock.json")
    return attestation.statement("registry.example/team/8.5.0", MANIFESTS, locked, origin, WHEN, WHEN)


def test_the_statement_names_the_images_the_lock_its_sources_and_the_checkout() -> None:
    locked = lock_io.read(ROOT / "lockfiles" / "8.5.0.lock.json")
    document = attestation.read_statement(_statement())
    assert document["_type"] == "https://in-toto.io/Statement/v1"
    assert document["predicateType"] == "https://slsa.dev/provenance/v1"
    assert [s["digest"]["sha256"] for s in document["subject"]] == ["1" * 64, "2" * 64]
    definition = document["predicate"]["buildDefinition"]
    assert definition["externalParameters"] == {"stack": "8.5.0", "lock_sha256": locked.lock_sha256}
    dependencies = {d["name"]: (d["uri"], d["digest"]["gitCommit"]) for d in definition["resolvedDependencies"]}
    catlass = locked.component("catlass").source
    assert dependencies["catlass"] == ("git+https://github.com/hicann/catlass.git", getattr(catlass, "commit", None))
    assert dependencies["checkout"] == ("git+https://git.example.com/team/stacks.git", "a" * 40)
    assert document["predicate"]["runDetails"]["builder"]["id"] == attestation.BUILDER_ID
    without = attestation.read_statement(_statement(Origin()))["predicate"]["buildDefinition"]
    assert "checkout" not in {d["name"] for d in without["resolvedDependencies"]}  # not in a checkout: not named


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda d: d.update(subject=[]), "At least one subject required"),
        (lambda d: d["subject"][0].pop("digest"), "digest"),
        (lambda d: d.update(_type="https://in-toto.io/Statement/v0.1"), "Wrong statement type"),
        (lambda d: d.update(predicateType="https://example.com/other/v1"), "predicate type"),
        (lambda d: d["predicate"]["buildDefinition"].update(buildTipe="x"), "buildTipe"),
        (lambda d: d["predicate"]["runDetails"]["metadata"].update(startedOn="yesterday"), "startedOn"),
    ],
    ids=["no-subjects", "subject-without-digest", "wrong-type", "other-predicate", "unknown-field", "bad-time"],
)
def test_a_malformed_statement_is_refused_by_the_bindings(edit: object, why: str) -> None:
    document = json.loads(_statement())
    edit(document)  # type: ignore[operator]
    with pytest.raises(attestation.BadStatement, match=why):
        attestation.read_statement(json.dumps(document).encode())
