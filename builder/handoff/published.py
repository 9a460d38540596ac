"""What a publish put beside an image, read back from its registry (execute.attestation): its provenance
statements, each checked by the in-toto bindings, and its CycloneDX SBOM, checked against its schema;
for `inspect` and `stackbuild sbom`. Both are referrers of the image's manifest for the architecture
asked for; the index's own referrers are read for provenance too, where earlier releases attached it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from builder.engine.protocol import EngineError
from builder.engine.registry_api import Descriptor, RegistryClient
from builder.engine.registry_referrers import Referrers
from builder.execute import attestation
from builder.handoff.sbom import validated
from builder.model.arch import Arch
from builder.model.errors import StackbuildError
from builder.model.settings import RegistryCredentials, login_for

# registry host (with a dot or a port, or localhost) / repository path : tag
REGISTRY_REF = re.compile(
    r"^(?P<registry>[A-Za-z0-9.-]+(:[0-9]+)?|\[[0-9a-fA-F:]+\](:[0-9]+)?)/(?P<repository>[a-z0-9._/-]+):(?P<tag>[\w.-]{1,128})$"
)


def registry_ref(image: str) -> tuple[str, str, str] | None:
    """(registry, repository, tag) of a reference that names a registry, else None (a local image)."""
    found = REGISTRY_REF.match(image)
    if found is None:
        return None
    registry = found["registry"]
    if "." not in registry and ":" not in registry and registry != "localhost":
        return None  # docker.io/library style names without a registry host: not ours to ask
    return registry, found["repository"], found["tag"]


@dataclass(frozen=True)
class Beside:
    """A published image's place in its registry: what its attachments refer to, the manifest of the
    architecture asked for first, then the index it is listed in."""

    referrers: Referrers
    repository: str
    subjects: tuple[Descriptor, ...]

    def provenance(self) -> list[dict[str, Any]]:
        """Each provenance statement attached to the image, then to its index."""
        statements = []
        for subject in self.subjects:
            for referrer, body in self.referrers.attached(self.repository, subject.digest, attestation.PROVENANCE):
                try:
                    statements.append(attestation.read_statement(body))
                except attestation.BadStatement as err:  # said as an unreadable attestation, not a crash
                    raise EngineError(f"its attestation {referrer}: {err}") from err
        return statements

    def sbom(self) -> str | None:
        """The CycloneDX SBOM attached to the image (the first, should there be several), as published."""
        for referrer, body in self.referrers.attached(self.repository, self.subjects[0].digest, attestation.SBOM):
            try:
                return validated(body.decode(), f"its SBOM {referrer}")
            except (UnicodeDecodeError, StackbuildError) as err:  # said as an unreadable SBOM, not a crash
                raise EngineError(f"its SBOM {referrer}: {str(err)[:300]}") from err
        return None


def beside(
    image: str, arch: Arch, credentials: RegistryCredentials | None, client: RegistryClient | None = None
) -> Beside | None:
    """Where image's attachments are (None: a local image, or nothing at that reference), asked with the
    settings' registry login (None: Docker's config's) unless a client is given."""
    ref = registry_ref(image)
    if ref is None:
        return None
    registry, repository, tag = ref
    client = client or RegistryClient(registry, login_for(credentials, registry))
    subjects = client.platform_manifest(repository, tag, arch)
    return Beside(Referrers(client), repository, subjects) if subjects else None


def provenance_lines(statements: list[dict[str, Any]]) -> list[str]:
    """One line per statement: who built it, from which checkout, when."""
    lines = []
    for document in statements:
        predicate = document.get("predicate", {})
        definition, run = predicate.get("buildDefinition", {}), predicate.get("runDetails", {})
        dependencies = {d.get("name"): d for d in definition.get("resolvedDependencies", [])}
        checkout = dependencies.get("checkout", {})
        commit = checkout.get("digest", {}).get("gitCommit")
        where = f"{checkout.get('uri', '').removeprefix('git+') or '?'} @ {commit}" if commit else "no checkout"
        version = run.get("builder", {}).get("version", {}).get("stackbuild", "?")
        finished = run.get("metadata", {}).get("finishedOn", "?")
        lines.append(f"provenance    stackbuild {version}, from {where}, finished {finished}")
    return lines


def sbom_lines(document: dict[str, Any] | None) -> list[str]:
    """What the SBOM published beside the image holds, in a line (none when there is none)."""
    if document is None:
        return []
    components = len(document.get("components", []))
    return [
        f"sbom          CycloneDX {document.get('specVersion')}, {components} components "
        "(`stackbuild sbom IMAGE` prints it)"
    ]
