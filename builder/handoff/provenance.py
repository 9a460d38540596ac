"""A published image's provenance, read back from its registry: the in-toto statements attached to
its index as referrers (execute.attestation), each checked by the in-toto bindings, for `inspect`."""

from __future__ import annotations

import json
import re
from typing import Any

from builder.engine.registry_api import RegistryClient
from builder.execute import attestation
from builder.model.errors import StackbuildError

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


def published_provenance(image: str, client: RegistryClient | None = None) -> list[dict[str, Any]]:
    """Each provenance statement attached to the index image names (none for a local image)."""
    ref = registry_ref(image)
    if ref is None:
        return []
    registry, repository, tag = ref
    client = client or RegistryClient(registry)
    index = client.manifest(repository, tag)
    if index is None:
        return []
    statements = []
    for entry in client.referrers(repository, index.digest):
        if entry.get("artifactType") != attestation.IN_TOTO or not isinstance(entry.get("digest"), str):
            continue
        manifest = client.manifest(repository, entry["digest"])
        layers = json.loads(manifest.body).get("layers", []) if manifest is not None else []
        for layer in layers:
            if layer.get("mediaType") == attestation.IN_TOTO:
                try:
                    statements.append(attestation.read_statement(client.blob(repository, layer["digest"])))
                except attestation.BadStatement as err:
                    raise StackbuildError(f"{image}: its attestation {entry['digest']}: {err}") from err
    return statements


def provenance_lines(statements: list[dict[str, Any]]) -> list[str]:
    """One line per statement: who built it, from which checkout, when."""
    lines = []
    for document in statements:
        predicate = document["predicate"]
        dependencies = {d.get("name"): d for d in predicate["buildDefinition"].get("resolvedDependencies", [])}
        checkout = dependencies.get("checkout")
        where = (
            f"{checkout['uri'].removeprefix('git+')} @ {checkout['digest']['gitCommit']}" if checkout else "no checkout"
        )
        run = predicate["runDetails"]
        version = run["builder"].get("version", {}).get("stackbuild", "?")
        finished = run.get("metadata", {}).get("finishedOn", "?")
        lines.append(f"provenance    stackbuild {version}, from {where}, finished {finished}")
    return lines
