"""What goes beside a published image, not in it, each an OCI 1.1 referrer of the image's manifest
(`Referrers.attach`), so the image's bytes stay what the lock decides: its provenance and its SBOM.

The provenance is an in-toto statement with an SLSA provenance v1 predicate, built and checked with
the in-toto-attestation bindings. Its subject is the image's manifest; the build definition is the
lock (its digest) and the resolved dependencies are each git source at its commit and the checkout
the stack's definition came from; the run details name the builder and when it ran.

The SBOM is the image's CycloneDX JSON document as `stackbuild sbom` makes it (handoff.sbom), as is.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from typing import Any

import google.protobuf.json_format as pb_json
from google.protobuf.timestamp_pb2 import Timestamp
from in_toto_attestation.predicates.provenance.v1 import provenance_pb2
from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor
from in_toto_attestation.v1.statement import Statement

from builder import __version__
from builder.engine.registry_referrers import ArtifactKind
from builder.inputs.project import Origin
from builder.inputs.source_kinds import kind_of
from builder.lock.locked import Lock
from builder.model.errors import StackbuildError

SLSA_PROVENANCE = "https://slsa.dev/provenance/v1"
BUILD_TYPE = "https://stackbuild.dev/build-type/lock/v1"  # a stackbuild build from a lock
BUILDER_ID = "https://stackbuild.dev/builder/publish"
IN_TOTO = "application/vnd.in-toto+json"  # the layer's and the referrer's artifact type
PREDICATE_ANNOTATION = "in-toto.io/predicate-type"
PROVENANCE = ArtifactKind(IN_TOTO, {PREDICATE_ANNOTATION: SLSA_PROVENANCE})
# CycloneDX's own media type (IANA-registered), as the layer and the artifactType, as Trivy's referrer
# plugin attaches a CycloneDX SBOM (aquasecurity/trivy-plugin-referrer) and `oras attach --artifact-type`
# does; BuildKit keeps its SBOMs (SPDX, in in-toto statements) per platform manifest too, but inside the
# index (docs.docker.com/build/metadata/attestations/attestation-storage), which would change its digest.
SBOM = ArtifactKind("application/vnd.cyclonedx+json", {})


class BadStatement(StackbuildError):
    """A statement the in-toto bindings refuse (a malformed or foreign attestation)."""


def _timestamp(when: datetime.datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(when.astimezone(datetime.timezone.utc))
    return stamp


def _dependencies(lock: Lock, origin: Origin) -> list[ResourceDescriptor]:
    described = [(component.id, kind_of(component.source).describe(component.source)) for component in lock.components]
    found = [
        ResourceDescriptor(name=name, uri=f"git+{about.vcs}", digest={"gitCommit": about.commit})
        for name, about in described
        if about.vcs is not None and about.commit is not None
    ]
    if origin.source and origin.revision:  # a URI only for a URL origin (not scp-style or a local path)
        uri = f"git+{origin.source}" if "://" in origin.source else ""
        found.append(ResourceDescriptor(name="checkout", uri=uri, digest={"gitCommit": origin.revision}))
    return found


def statement(
    repository: str,
    manifests: Sequence[str],
    lock: Lock,
    origin: Origin,
    started: datetime.datetime,
    finished: datetime.datetime,
) -> bytes:
    """The statement for an index whose platform manifests are these digests (sha256:...), as JSON."""
    predicate = provenance_pb2.Provenance()
    definition = predicate.build_definition
    definition.build_type = BUILD_TYPE
    definition.external_parameters.update({"stack": lock.stack, "lock_sha256": lock.lock_sha256})
    definition.resolved_dependencies.extend(d.pb for d in _dependencies(lock, origin))
    run = predicate.run_details
    run.builder.id = BUILDER_ID
    run.builder.version["stackbuild"] = __version__
    run.metadata.started_on.CopyFrom(_timestamp(started))
    run.metadata.finished_on.CopyFrom(_timestamp(finished))
    subjects = [
        ResourceDescriptor(name=f"{repository}@{digest}", digest={"sha256": digest.removeprefix("sha256:")}).pb
        for digest in manifests
    ]
    made = Statement(subjects, SLSA_PROVENANCE, pb_json.MessageToDict(predicate))
    made.validate()
    return json.dumps(pb_json.MessageToDict(made.pb), indent=2, sort_keys=True).encode()


def read_statement(body: bytes) -> dict[str, Any]:
    """A statement as the bindings accept it (an in-toto v1 statement with an SLSA provenance v1
    predicate), as a dict; BadStatement naming why not."""
    try:
        proto = pb_json.Parse(body, Statement([], "", {}).pb)
        Statement.copy_from_pb(proto).validate()
        if proto.predicate_type != SLSA_PROVENANCE:
            raise ValueError(f"predicate type {proto.predicate_type!r}, not {SLSA_PROVENANCE}")
        pb_json.ParseDict(pb_json.MessageToDict(proto.predicate), provenance_pb2.Provenance())
    except (pb_json.ParseError, ValueError) as err:
        raise BadStatement(f"not an in-toto provenance statement: {str(err)[:200]}") from err
    parsed: dict[str, Any] = pb_json.MessageToDict(proto)
    return parsed
