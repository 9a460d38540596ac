"""Loading a manifest: YAML with positions, the schema, then the graph, packages and paths.

Every problem is reported as one located line (`file:line:col: field: message`) with "did
you mean" hints; nothing here touches the network.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from builder.manifest import locate, yamlpos
from builder.manifest.graph import find_cycle, suggest
from builder.manifest.model import SCHEMA_VERSION, Manifest
from builder.manifest.toolkit import PACKAGE_ROLES
from builder.manifest.yamlpos import PositionedYaml
from builder.model import plugins
from builder.model.canonical import digest
from builder.model.errors import LocatedProblem, ManifestError

# Stage names the builder uses besides the components'.
RESERVED_STAGE_NAMES = ("base-devel", "base-runtime", "toolkit", "devel-image", "runtime-image")


def json_schema() -> dict[str, Any]:
    schema = Manifest.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "stackbuild stack manifest"
    return schema


def manifest_digest(manifest: Manifest) -> str:
    """sha256 of the manifest's canonical form: what the user wrote, defaults left out."""
    return digest(manifest.model_dump(mode="json", by_alias=True, exclude_defaults=True))


def check_graph(manifest: Manifest, doc: PositionedYaml) -> list[LocatedProblem]:
    problems = []
    ids = [c.id for c in manifest.components]
    seen: set[str] = set()
    for i, comp in enumerate(manifest.components):
        if comp.id in RESERVED_STAGE_NAMES:
            message = f"component id '{comp.id}' is the name of a builder stage: rename it"
            problems.append(doc.locate(("components", i, "id"), message))
        if comp.id in seen:
            problems.append(doc.locate(("components", i, "id"), f"component id '{comp.id}' is used twice"))
        seen.add(comp.id)
        for j, dep in enumerate(comp.depends_on):
            where = ("components", i, "depends_on", j)
            if dep == comp.id:
                problems.append(doc.locate(where, f"'{dep}' depends on itself"))
            elif dep not in ids:
                problems.append(doc.locate(where, f"unknown component '{dep}'{suggest(dep, ids)}"))
    if problems:
        return problems
    cycle = find_cycle({c.id: c.depends_on for c in manifest.components})
    if cycle:
        first = ids.index(cycle[0])
        problems.append(doc.locate(("components", first, "depends_on"), "dependency cycle: " + " -> ".join(cycle)))
    return problems


def check_packages(manifest: Manifest, doc: PositionedYaml) -> list[LocatedProblem]:
    problems = []
    arches = manifest.platform.architectures
    if manifest.toolkit.preinstalled:
        if not plugins.kind_of(plugins.BASES, manifest.base).prebuilt:
            problems.append(doc.locate(("toolkit", "preinstalled"), "a preinstalled toolkit needs an image base"))
        if any(manifest.toolkit.packages.of(role) for role in PACKAGE_ROLES):
            message = "the toolkit is preinstalled in the base image: give no packages"
            problems.append(doc.locate(("toolkit", "packages"), message))
        return problems
    for role in PACKAGE_ROLES:
        packages = manifest.toolkit.packages.of(role)
        if getattr(manifest.toolkit.packages, role) is None:
            continue
        for arch in arches:
            if arch not in packages:
                message = f"no {role} package for {arch}, which platform.architectures lists"
                problems.append(doc.locate(("toolkit", "packages", role), message))
        for arch in packages:
            if arch not in arches:
                message = f"package for {arch}, which platform.architectures does not list"
                problems.append(doc.locate(("toolkit", "packages", role, arch.value), message))
    return problems


def check_paths(manifest: Manifest, doc: PositionedYaml, base_dir: Path) -> list[LocatedProblem]:
    problems = []
    for i, comp in enumerate(manifest.components):
        if found := plugins.kind_of(plugins.SOURCES, comp.source).problem(comp.source, base_dir):
            field, problem = found
            problems.append(doc.locate(("components", i, "source", field), problem))
    return problems


def check_env_scripts(manifest: Manifest, doc: PositionedYaml) -> list[LocatedProblem]:
    """Each env script is an artifact or inside one: the images that source it must have it."""
    problems = []
    for i, comp in enumerate(manifest.components):
        for j, script in enumerate(comp.env_scripts):
            if comp.artifact_of(script) is None:
                message = f"{script} is not an artifact nor inside one: list it (or its directory) under artifacts"
                problems.append(doc.locate(("components", i, "env_scripts", j), message))
    return problems


def check_fetch(manifest: Manifest, doc: PositionedYaml) -> list[LocatedProblem]:
    """Each file a component fetches has a place of its own in its directory."""
    problems = []
    for i, comp in enumerate(manifest.components):
        seen: set[str] = set()
        for j, fetch in enumerate(comp.fetch):
            if fetch.to in seen:
                message = f"{fetch.to} is the place of another fetch entry: give each file its own `to`"
                problems.append(doc.locate(("components", i, "fetch", j, "to"), message))
            seen.add(fetch.to)
    return problems


def load(path: Path) -> Manifest:
    """Parse and validate a manifest; raise ManifestError listing every located problem."""
    doc = yamlpos.read(path)
    if not isinstance(doc.data, dict):
        raise ManifestError(
            [LocatedProblem(str(path), 1, 1, "", "a manifest is a YAML mapping (schema: 1, name: ...)")]
        )
    try:
        manifest = Manifest.model_validate(doc.data)
    except ValidationError as err:
        raise ManifestError(locate.problems(err, Manifest, doc, SCHEMA_VERSION)) from err
    problems = (
        check_graph(manifest, doc)
        + check_packages(manifest, doc)
        + check_paths(manifest, doc, path.parent)
        + check_env_scripts(manifest, doc)
        + check_fetch(manifest, doc)
    )
    if problems:
        raise ManifestError(problems)
    return manifest
