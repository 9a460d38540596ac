"""The SBOM of a final image (validated CycloneDX: the lock's components and packages, what the
image's own package managers report, the same bytes for the same image) and the provenance record."""

from __future__ import annotations

import json
from pathlib import Path

from cyclonedx.schema import SchemaVersion

from builder import __version__
from builder.execute.pipeline import StagesBuilt, Tagged
from builder.execute.provenance import provenance, write_provenance
from builder.handoff.contents import read_contents
from builder.handoff.sbom import make_sbom
from builder.inputs.path_source import LockedPath
from builder.inputs.project import Origin
from builder.model.arch import Arch
from tests.fake_engine import FakeEngine
from tests.golden_plan import golden_plan, golden_request
from tests.unit.handoff.test_handoff import IN_RUNTIME, REFERENCE, holding

DEBS = {"bash": ("5.2.15-2+b2", "amd64"), "python3": ("3.11.2-1+b1", "amd64")}
PYTHON = {"numpy": "1.24.2", "Harness_Reference": "0.1.0"}


def sbom() -> dict[str, object]:
    from cyclonedx.validation.json import JsonStrictValidator  # seconds to import: only in the worker running these

    engine = FakeEngine()
    holding(engine, "img", REFERENCE)
    text = make_sbom(read_contents(engine, "img", Arch.X86_64), "sha256:" + "a" * 64, DEBS, PYTHON, "debian")
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    assert text == make_sbom(read_contents(engine, "img", Arch.X86_64), "sha256:" + "a" * 64, DEBS, PYTHON, "debian")
    document: dict[str, object] = json.loads(text)
    return document


def test_the_sbom_lists_the_stack_the_toolkit_and_every_package_with_versions() -> None:
    document = sbom()
    components = {c["bom-ref"]: c for c in document["components"]}  # type: ignore[attr-defined]
    for locked in map(REFERENCE.component, IN_RUNTIME):  # what the runtime image holds, not the whole stack
        assert isinstance(locked.source, LockedPath)
        assert components[f"component:{locked.id}"]["version"] == locked.source.tree_sha256
    assert "component:tilelang" not in components and "component:tilelang-compiler" not in components
    toolkit = REFERENCE.package(Arch.X86_64, "toolkit")
    assert toolkit is not None
    assert components["toolkit:toolkit"]["hashes"] == [{"alg": "SHA-256", "content": toolkit.sha256}]
    assert components["pkg:deb/debian/bash@5.2.15-2%2Bb2?arch=amd64"]["version"] == "5.2.15-2+b2"
    assert components["pkg:pypi/harness-reference@0.1.0"]["name"] == "Harness_Reference"
    ops = REFERENCE.package(Arch.X86_64, "ops")
    assert ops is not None and components["toolkit:ops"]["hashes"] == [{"alg": "SHA-256", "content": ops.sha256}]
    assert len(components) == len(IN_RUNTIME) + 2 + len(DEBS) + len(PYTHON)  # toolkit and ops packages
    metadata = document["metadata"]
    assert metadata["timestamp"].startswith("2024-01-01")  # type: ignore[index]  # the lock's source date
    assert document["serialNumber"] == sbom()["serialNumber"]  # the same image, the same SBOM


def test_the_provenance_record_names_the_builder_lock_stages_bases_and_checkout(tmp_path: Path) -> None:
    plan = golden_plan()
    request = golden_request()
    ids = {name: f"sha256:{stage.key}" for name, stage in plan.stages.items()}
    tagged = Tagged(StagesBuilt(plan, ids, built=("kernels",), cached=()), dict(plan.final_tags))
    origin = Origin("https://git.example.com/team/stacks.git", "a" * 40)
    record = provenance(tagged, request.lock, "the local engine", 12.345, origin)
    assert record["source"] == {"origin": "https://git.example.com/team/stacks.git", "commit": "a" * 40}
    assert record["builder"] == {"name": "stackbuild", "version": __version__}
    assert record["lock_sha256"] == request.lock.lock_sha256
    assert record["stages"]["kernels"] == {
        "key": plan.stages["kernels"].key,
        "image": ids["kernels"],
        "built_here": True,
    }
    assert record["images"] == {tag: ids[final] for final, tag in plan.final_tags.items()}
    assert "image" in record["bases"]  # the golden stack starts from an image base
    assert record["build"]["seconds"] == 12.35 and record["build"]["host"]
    path = write_provenance(tmp_path, record)
    assert path == tmp_path / "golden" / "x86_64.json" and json.loads(path.read_text()) == record
