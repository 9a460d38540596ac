"""Stack manifests (`stacks/<name>.yaml`, schema 1): the model and its validation.

A manifest is what a team reviews: the toolkit packages, the host it is certified for, the
platform, the base image and the components with their sources, build steps, artifacts and
probes. Loading reports every problem as one located line (`file:line:col: field: message`)
with "did you mean" hints; nothing here touches the network.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from builder.errors import Located, ManifestError
from builder.yamlpos import DuplicateKey, PositionedYaml

SCHEMA_VERSION = 1
ARCHITECTURES = ("x86_64", "aarch64")
ID_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"
SHA256_PATTERN = r"^[0-9a-f]{64}$"
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
Arch = Literal["x86_64", "aarch64"]
# Stage names the builder uses besides the components'.
RESERVED_STAGE_NAMES = ("base-devel", "base-runtime", "toolkit", "devel-image", "runtime-image")
PATTERN_HINTS = {
    "image": "pin the image by digest, as NAME@sha256:<64 hex digits>",
    "sha256": "a sha256 is 64 lowercase hex digits (quote it in YAML)",
    "chip": "use one of 910b, 910, 310p, a3, 950",
    "version": "use a CANN version such as 8.5.0 or 8.3.RC1",
    "python": "use MAJOR.MINOR, e.g. 3.11",
    "id": "use lowercase letters, digits, '.', '_' and '-'",
    "name": "use letters, digits, '.', '_' and '-'",
}


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def no_credentials(url: str | None) -> str | None:
    """URLs end up in locks and logs: a user:password@ part is refused (without echoing it)."""
    if url and re.match(r"^[a-z][a-z0-9+.-]*://[^/@\s]+@", url, re.IGNORECASE):
        raise ValueError(
            "the URL carries credentials (user:password@): use a git credential helper, "
            "`docker login` or the site configuration's URL rewrites instead"
        )
    return url


class Package(Model):
    """One installer file for one architecture: downloaded from `url`, or made by `generate`."""

    file: str = Field(description="installer file name, e.g. Ascend-cann-toolkit_8.5.0_linux-x86_64.zip")
    url: str | None = Field(default=None, description="where to download it (site URL rewrites apply)")
    generate: str | None = Field(
        default=None,
        description="command (run from the manifest's directory) that writes the file into {output_dir}",
    )
    sha256: str | None = Field(
        default=None,
        pattern=SHA256_PATTERN,
        description="expected sha256 (hex); without it the lock pins the first download",
    )

    _url = field_validator("url")(no_credentials)

    @model_validator(mode="after")
    def one_origin(self) -> Package:
        if (self.url is None) == (self.generate is None):
            raise ValueError("give exactly one of 'url' (download) or 'generate' (a local command)")
        if "/" in self.file:
            raise ValueError(f"'file' must be a bare file name, not a path: {self.file}")
        return self


PackageSet = dict[Arch, Package]


class Packages(Model):
    toolkit: PackageSet
    ops: PackageSet | None = Field(default=None, description="operator/kernels package (kernels-<chip> / <chip>-ops)")
    nnal: PackageSet | None = None


class Toolkit(Model):
    vendor: Literal["huawei", "cpusim"] = Field(
        description="huawei = real CANN; cpusim = the reference stack's CPU simulation"
    )
    version: str = Field(pattern=r"^\d+\.\d+\.(\d+|RC\d+)(\.\w+)?$", description="CANN version, e.g. 8.5.0, 8.3.RC1")
    chip: str = Field(pattern=r"^(910b|910|310p|a3|950)$", description="NPU chip: 910b, 910, 310p, a3, 950")
    packages: Packages


class Host(Model):
    """What lives on the host, never in the image: the versions this image is certified for."""

    driver: str = Field(description="NPU driver (HDK) version, e.g. 25.5.0; 'none' for a CPU simulation")
    firmware: str | None = None


class Platform(Model):
    os: Literal["debian", "ubuntu", "openeuler"]
    os_version: str
    python: str = Field(pattern=r"^3\.\d+$")
    architectures: list[Arch] = Field(min_length=1)

    @field_validator("architectures")
    @classmethod
    def unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("architectures listed twice")
        return value


class Bootstrap(Model):
    tool: Literal["mmdebstrap"] = "mmdebstrap"
    suite: str
    mirror: str
    variant: Literal["apt", "minbase", "required", "important", "standard"] = "apt"
    packages: list[str] = Field(default_factory=list, description="packages of the build (devel) base")
    runtime_packages: list[str] = Field(
        default_factory=list, description="packages of the smaller base the runtime image starts from"
    )


class Base(Model):
    image: str | None = Field(
        default=None, pattern=r"^[^@\s]+@sha256:[0-9a-f]{64}$", description="image reference pinned by digest"
    )
    bootstrap: Bootstrap | None = None

    @model_validator(mode="after")
    def one_kind(self) -> Base:
        if (self.image is None) == (self.bootstrap is None):
            raise ValueError("give exactly one of 'image' (pinned by digest) or 'bootstrap'")
        return self


class Source(Model):
    git: str | None = Field(default=None, description="repository URL, or site:NAME for the site config's repos")
    ref: str | None = Field(default=None, description="branch, tag or commit of the git source")
    path: str | None = Field(default=None, description="directory, relative to the manifest")

    _git = field_validator("git")(no_credentials)

    @model_validator(mode="after")
    def one_kind(self) -> Source:
        if (self.git is None) == (self.path is None):
            raise ValueError("give exactly one of 'git' (with 'ref') or 'path'")
        if self.git is not None and not self.ref:
            raise ValueError("a git source needs a 'ref' (branch, tag or commit)")
        if self.path is not None and self.ref is not None:
            raise ValueError("'ref' only goes with a git source")
        return self


class Artifact(Model):
    path: str = Field(description="file or directory, relative to the component's directory")
    runtime: bool = Field(default=False, description="also copy into the runtime image")

    @field_validator("path")
    @classmethod
    def relative(cls, value: str) -> str:
        if value.startswith("/") or ".." in Path(value).parts:
            raise ValueError(f"artifact path must be relative and stay inside the component: {value}")
        return value


class ElfSectionProbe(Model):
    kind: Literal["elf-section"]
    file: str
    section: str


class LinkedFromProbe(Model):
    kind: Literal["linked-from"]
    file: str
    within: str = Field(description="directory the named libraries must resolve inside (e.g. the toolkit)")
    libraries: list[str] = Field(default_factory=list)


class EnvProbe(Model):
    kind: Literal["env"]
    set: list[str] = Field(default_factory=list, description="variables that must be set")
    paths: list[str] = Field(default_factory=list, description="variables whose value (a path) must exist")


class CommandProbe(Model):
    kind: Literal["command"]
    run: str
    exit_code: int = 0
    expect: str | None = Field(default=None, description="regular expression the output must match")


Probe = Annotated[Union[ElfSectionProbe, LinkedFromProbe, EnvProbe, CommandProbe], Field(discriminator="kind")]  # noqa: UP007


class Component(Model):
    id: str = Field(pattern=ID_PATTERN)
    source: Source
    depends_on: list[str] = Field(default_factory=list)
    system_packages: list[str] = Field(default_factory=list)
    build: list[str] = Field(default_factory=list, description="shell commands run in the component's directory")
    env: dict[str, str] = Field(default_factory=dict, description="variables exported to later stages and the image")
    artifacts: list[Artifact] = Field(default_factory=list)
    probes: list[Probe] = Field(default_factory=list)

    @field_validator("env")
    @classmethod
    def env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not re.match(ENV_NAME_PATTERN, name):
                raise ValueError(f"'{name}' is not a valid environment variable name")
        return value


class Smoke(Model):
    command: str = Field(min_length=1)
    expect: str = Field(description="regular expression the output of a successful run matches")
    needs_device: bool = Field(default=False, description="the command launches on an NPU")


class Manifest(Model):
    schema_: Literal[1] = Field(alias="schema")
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    description: str = ""
    toolkit: Toolkit
    host: Host
    platform: Platform
    base: Base
    components: list[Component] = Field(min_length=1)
    smoke: Smoke

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def component(self, component_id: str) -> Component:
        return next(c for c in self.components if c.id == component_id)


def json_schema() -> dict[str, Any]:
    schema = Manifest.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "stackbuild stack manifest"
    return schema


def topological_order(components: Iterable[Component]) -> list[str]:
    """Component ids so that each comes after what it depends on (ties kept in file order)."""
    pending = {c.id: list(c.depends_on) for c in components}
    order: list[str] = []
    while pending:
        ready = [cid for cid, deps in pending.items() if all(d in order for d in deps)]
        if not ready:
            raise ValueError("dependency cycle")  # check_graph reports cycles first, with the path
        order.append(ready[0])
        del pending[ready[0]]
    return order


def find_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in graph.get(node, []):
            if state.get(dep) == 1:
                return [*stack[stack.index(dep) :], dep]
            if dep not in state and (cycle := visit(dep)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in graph:
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def suggest(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _model_keys(annotation: Any, loc: tuple[str | int, ...]) -> list[str]:
    """Field names (by alias) of the model a pydantic error location points into."""
    annotation = _unwrap(annotation, loc[:1])
    if not loc:
        if _is_model(annotation):
            return [f.alias or n for n, f in annotation.model_fields.items()]
        return []
    head, rest = loc[0], loc[1:]
    if _is_model(annotation) and _kind_tag(annotation) == head:
        return _model_keys(annotation, rest)
    origin = typing.get_origin(annotation)
    if origin in (list, dict):
        return _model_keys(typing.get_args(annotation)[-1], rest)
    if _is_model(annotation):
        for name, field in annotation.model_fields.items():
            if head in (name, field.alias):
                return _model_keys(field.annotation, rest)
    return []


def _kind_tag(model: type[BaseModel]) -> str | None:
    """The discriminator value of a probe model (its Literal `kind`)."""
    field = model.model_fields.get("kind")
    args = typing.get_args(field.annotation) if field else ()
    return str(args[0]) if len(args) == 1 else None


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _unwrap(annotation: Any, next_loc: tuple[str | int, ...]) -> Any:
    """Strip Annotated/Optional, and pick the member of a tagged union named by the location."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            chosen = [m for m in members if _is_model(m) and next_loc and _kind_tag(m) == next_loc[0]]
            annotation = chosen[0] if chosen else members[0]
        else:
            return annotation


def _strip_union_tags(loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """Drop the discriminator tags pydantic puts in locations (e.g. probes.0.elf-section.file)."""
    return tuple(part for i, part in enumerate(loc) if not (i >= 2 and loc[i - 2] == "probes"))


def _pydantic_problems(err: ValidationError, doc: PositionedYaml) -> list[Located]:
    problems = []
    for item in err.errors():
        raw_loc = tuple(item["loc"])
        loc = _strip_union_tags(raw_loc)
        kind = item["type"]
        message = item["msg"]
        if kind == "extra_forbidden":
            key = str(loc[-1])
            known = _model_keys(Manifest, raw_loc[:-1])
            message = f"unknown key '{key}'{suggest(key, known)}"
            problems.append(doc.locate(loc, message, key_position=True))
            continue
        if kind == "missing":
            message = f"missing required key '{loc[-1]}'"
            problems.append(doc.locate(loc[:-1], message, field_path_of=loc))
            continue
        if kind == "literal_error" and loc == ("schema",):
            message = f"unsupported schema version {item['input']!r}: this stackbuild reads schema {SCHEMA_VERSION}"
        elif kind == "string_pattern_mismatch":
            hint = PATTERN_HINTS.get(str(loc[-1]), f"expected a match of {item['ctx']['pattern']}")
            message = f"{item['input']!r} is not valid: {hint}"
        elif kind == "string_type":
            message = f"expected a string, got {item['input']!r}: quote the value in YAML"
        elif kind == "value_error":
            message = message.removeprefix("Value error, ")
        elif kind == "union_tag_invalid":
            message = (
                f"unknown probe kind {item['input'].get('kind')!r}" if isinstance(item["input"], dict) else message
            )
            loc = (*loc, "kind")
        problems.append(doc.locate(loc, message))
    return problems


def check_graph(manifest: Manifest, doc: PositionedYaml) -> list[Located]:
    problems = []
    ids = [c.id for c in manifest.components]
    seen: set[str] = set()
    for i, comp in enumerate(manifest.components):
        if comp.id in RESERVED_STAGE_NAMES:
            problems.append(
                doc.locate(
                    ("components", i, "id"), f"component id '{comp.id}' is the name of a builder stage: rename it"
                )
            )
        if comp.id in seen:
            problems.append(doc.locate(("components", i, "id"), f"component id '{comp.id}' is used twice"))
        seen.add(comp.id)
        for j, dep in enumerate(comp.depends_on):
            if dep == comp.id:
                problems.append(doc.locate(("components", i, "depends_on", j), f"'{dep}' depends on itself"))
            elif dep not in ids:
                problems.append(
                    doc.locate(("components", i, "depends_on", j), f"unknown component '{dep}'{suggest(dep, ids)}")
                )
    if problems:
        return problems
    cycle = find_cycle({c.id: c.depends_on for c in manifest.components})
    if cycle:
        first = ids.index(cycle[0])
        problems.append(doc.locate(("components", first, "depends_on"), "dependency cycle: " + " -> ".join(cycle)))
    return problems


def check_packages(manifest: Manifest, doc: PositionedYaml) -> list[Located]:
    problems = []
    arches = manifest.platform.architectures
    for kind in ("toolkit", "ops", "nnal"):
        packages: PackageSet | None = getattr(manifest.toolkit.packages, kind)
        if packages is None:
            continue
        for arch in arches:
            if arch not in packages:
                problems.append(
                    doc.locate(
                        ("toolkit", "packages", kind),
                        f"no {kind} package for {arch}, which platform.architectures lists",
                    )
                )
        for arch in packages:
            if arch not in arches:
                problems.append(
                    doc.locate(
                        ("toolkit", "packages", kind, arch),
                        f"package for {arch}, which platform.architectures does not list",
                    )
                )
    return problems


def check_paths(manifest: Manifest, doc: PositionedYaml, base_dir: Path) -> list[Located]:
    problems = []
    for i, comp in enumerate(manifest.components):
        if comp.source.path is not None and not (base_dir / comp.source.path).is_dir():
            problems.append(
                doc.locate(
                    ("components", i, "source", "path"),
                    f"directory {comp.source.path} does not exist (paths are relative to the manifest)",
                )
            )
    return problems


def load(path: Path) -> Manifest:
    """Parse and validate a manifest; raise ManifestError listing every located problem."""
    try:
        text = path.read_text()
    except OSError as err:
        raise ManifestError([Located(str(path), 0, 0, "", f"cannot read: {err.strerror}")]) from err
    try:
        doc = PositionedYaml(text, str(path))
    except DuplicateKey as err:
        raise ManifestError([err.located]) from err
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        problem = getattr(err, "problem", None) or str(err)
        raise ManifestError([Located(str(path), line, col, "", f"invalid YAML: {problem}")]) from err
    if not isinstance(doc.data, dict):
        raise ManifestError([Located(str(path), 1, 1, "", "a manifest is a YAML mapping (schema: 1, name: ...)")])
    try:
        manifest = Manifest.model_validate(doc.data)
    except ValidationError as err:
        raise ManifestError(_pydantic_problems(err, doc)) from err
    problems = check_graph(manifest, doc) + check_packages(manifest, doc) + check_paths(manifest, doc, path.parent)
    if problems:
        raise ManifestError(problems)
    return manifest
