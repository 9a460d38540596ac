"""A published image's provenance, read back from its registry: the in-toto statements attached to
its index as referrers (execute.attestation), each checked by the in-toto bindings, for `inspect`."""

from __future__ import annotations

import json
import re
from typing import Any

from builder.engine.protocol import EngineError
from builder.engine.registry_api import RegistryClient
from builder.execute import attestation
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


def published_provenance(
    image: str, credentials: RegistryCredentials | None, client: RegistryClient | None = None
) -> list[dict[str, Any]]:
    """Each provenance statement attached to the index image names (none for a local image), read with
    the settings' registry login (None: Docker's config's) unless a client is given."""
    ref = registry_ref(image)
    if ref is None:
        return []
    registry, repository, tag = ref
    client = client or RegistryClient(registry, login_for(credentials, registry))
    index = client.manifest(repository, tag)
    if index is None:
        return []
    statements = []
    for entry in client.referrers(repository, index.digest):
        annotations = entry.get("annotations")
        predicate = annotations.get(attestation.PREDICATE_ANNOTATION) if isinstance(annotations, dict) else None
        if predicate != attestation.SLSA_PROVENANCE:
            continue  # another kind of referrer (a signature, an SBOM): not ours to read
        manifest = client.manifest(repository, str(entry.get("digest", "")))
        layers = json.loads(manifest.body).get("layers", []) if manifest is not None else []
        for layer in layers:
            if isinstance(layer, dict) and layer.get("mediaType") == attestation.IN_TOTO:
                try:
                    statements.append(attestation.read_statement(client.blob(repository, str(layer.get("digest")))))
                except attestation.BadStatement as err:  # said as an unreadable attestation, not a crash
                    raise EngineError(f"its attestation {entry.get('digest')}: {err}") from err
    return statements


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
