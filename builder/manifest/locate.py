"""Pydantic validation errors as located lines: the YAML position, the field path, a hint.

Locations are walked along the model, so the tags pydantic puts in locations of tagged
unions (`source.git.ref`, `probes.0.elf-section.file`) are dropped and unknown keys get a
"did you mean" from the fields of the model they were found in.
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Union

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from builder.manifest.graph import suggest
from builder.manifest.yamlpos import PositionedYaml
from builder.model.errors import LocatedProblem

Loc = tuple[str | int, ...]
PATTERN_HINTS = {
    "image": "pin the image by digest, as NAME@sha256:<64 hex digits>",
    "sha256": "a sha256 is 64 lowercase hex digits (quote it in YAML)",
    "chip": "use one of 910b, 910, 310p, a3, 950",
    "version": "use a CANN version such as 8.5.0 or 8.3.RC1",
    "python": "use MAJOR.MINOR, e.g. 3.11",
    "id": "use a lowercase letter, then lowercase letters, digits and '-' (an id names a Docker build stage)",
    "name": "use letters, digits, '.', '_' and '-'",
}
MISSING_HINTS = {"ref": "a git source needs a 'ref' (branch, tag or commit)"}


def _tag_of(member: Any) -> str | None:
    """The tag of a tagged union member: a pydantic Tag, or the Literal `kind` of a probe model."""
    if typing.get_origin(member) is Annotated:
        tags = [m.tag for m in typing.get_args(member)[1:] if hasattr(m, "tag")]
        return str(tags[0]) if tags else None
    field = member.model_fields.get("kind") if _is_model(member) else None
    args = typing.get_args(field.annotation) if field else ()
    return str(args[0]) if len(args) == 1 else None


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _strip(annotation: Any) -> Any:
    while typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _union_members(annotation: Any) -> list[Any]:
    if typing.get_origin(annotation) in (Union, types.UnionType):
        return [a for a in typing.get_args(annotation) if a is not type(None)]
    return []


def _child(annotation: Any, part: str | int) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (list, dict):
        return typing.get_args(annotation)[-1]
    if _is_model(annotation):
        for name, field in annotation.model_fields.items():
            if part in (name, field.alias):
                return field.annotation
    return None


def walk(model: type[BaseModel], loc: Loc) -> tuple[Loc, Any]:
    """(loc without union tags, the annotation it ends at)."""
    annotation: Any = model
    clean: list[str | int] = []
    for part in loc:
        annotation = _strip(annotation)
        members = _union_members(annotation)
        tagged = [m for m in members if _tag_of(m) == part]
        if tagged:
            annotation = tagged[0]
            continue
        if members:
            annotation = _strip(members[0])
        clean.append(part)
        annotation = _child(annotation, part)
    return tuple(clean), _strip(annotation)


def _keys(annotation: Any) -> list[str]:
    return [f.alias or n for n, f in annotation.model_fields.items()] if _is_model(annotation) else []


def _short(value: object) -> str:
    """A value as it is quoted in an error: never more than a line of it."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


def _message(item: ErrorDetails, loc: Loc, schema_version: int) -> str:
    kind, message = item["type"], item["msg"]
    if kind == "literal_error" and loc == ("schema",):
        return f"unsupported schema version {_short(item['input'])}: this stackbuild reads schema {schema_version}"
    if kind == "string_pattern_mismatch":
        hint = PATTERN_HINTS.get(str(loc[-1]), f"expected a match of {item.get('ctx', {}).get('pattern')}")
        return f"{_short(item['input'])} is not valid: {hint}"
    if kind == "string_type":
        return f"expected a string, got {_short(item['input'])}: quote the value in YAML"
    if kind == "int_type":
        return f"expected a whole number, got {_short(item['input'])}: write it without quotes"
    if kind == "value_error":
        return message.removeprefix("Value error, ")
    if kind == "union_tag_invalid" and isinstance(item["input"], dict):
        return f"unknown probe kind {_short(item['input'].get('kind'))}"
    return message


def problems(
    err: ValidationError, model: type[BaseModel], doc: PositionedYaml, schema_version: int
) -> list[LocatedProblem]:
    found = []
    for item in err.errors():
        raw_loc = tuple(item["loc"])
        loc, _ = walk(model, raw_loc)
        if item["type"] == "extra_forbidden":
            key = str(loc[-1])
            _, parent = walk(model, raw_loc[:-1])
            found.append(doc.locate(loc, f"unknown key '{key}'{suggest(key, _keys(parent))}", key_position=True))
        elif item["type"] == "missing":
            message = MISSING_HINTS.get(str(loc[-1]), f"missing required key '{loc[-1]}'")
            found.append(doc.locate(loc[:-1], message, field_path_of=loc))
        elif item["type"] == "union_tag_invalid":
            found.append(doc.locate((*loc, "kind"), _message(item, loc, schema_version)))
        else:
            found.append(doc.locate(loc, _message(item, loc, schema_version)))
    return found
