"""Kinds as plug-ins: each kind of source, of base, of toolkit package and of the form a package is
shipped in is one module that a group of entry points names
(`[project.entry-points."stackbuild.sources"]` in a distribution's metadata, the mechanism
repo2docker's engines and pytest's plugins use). stackbuild's own kinds are listed here as well,
so a checkout run without being installed has them; a plug-in may add kinds but not replace one of
these.

This module only finds and loads them: what a kind is, and the models derived from the kinds
found, are the business of the layer that uses them (`builder.inputs.source_kinds`,
`builder.inputs.base_kinds`, `builder.inputs.package_kinds`, `builder.inputs.package_forms`)."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any

from builder.model.errors import StackbuildError

# How a kind's pin, as the JSON of lock version N, becomes version N+1's: by N.
Upgrades = Mapping[int, Callable[[dict[str, Any]], dict[str, Any]]]

SOURCES = "stackbuild.sources"
BASES = "stackbuild.bases"
PACKAGES = "stackbuild.packages"
FORMS = "stackbuild.package_forms"
# name -> "module:attribute" of the kind object, in the order they appear in unions and the schema.
BUILTIN: dict[str, dict[str, str]] = {
    SOURCES: {"git": "builder.inputs.git_source:KIND", "path": "builder.inputs.path_source:KIND"},
    BASES: {"image": "builder.inputs.image_base:KIND", "bootstrap": "builder.inputs.bootstrap_base:KIND"},
    PACKAGES: {"download": "builder.inputs.download_package:KIND", "generate": "builder.inputs.generated_package:KIND"},
    FORMS: {"zip": "builder.inputs.signed:FORM", "run": "builder.inputs.package_forms:BARE"},
}


@functools.cache
def loaded(group: str) -> dict[str, Any]:
    """Every kind of group, by name: stackbuild's own first, then the plug-ins' in name order."""
    named = dict(BUILTIN.get(group, {}))
    for point in sorted(entry_points(group=group), key=lambda p: p.name):
        if named.get(point.name, point.value) != point.value:
            raise StackbuildError(f"plug-in {point.value} names the {group} kind {point.name!r}, which stackbuild has")
        named[point.name] = point.value
    return {name: _load(group, name, target) for name, target in named.items()}


def _load(group: str, name: str, target: str) -> Any:
    module, _, attribute = target.partition(":")
    try:
        kind = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as err:
        raise StackbuildError(f"the {group} kind {name!r} ({target}) cannot be loaded: {err}") from err
    if getattr(kind, "tag", None) != name:
        raise StackbuildError(f"the {group} kind at {target} calls itself {getattr(kind, 'tag', None)!r}, not {name!r}")
    return kind


def upgraded(group: str, pin: dict[str, Any], version: int, tag: str | None = None) -> dict[str, Any]:
    """A pin's JSON as lock version `version` wrote it, as the next version writes it: its kind's
    upgrade for that version (`upgrades`), or as it is when the kind has none (it did not change, or
    did not exist then). The kind is the pin's `kind` unless that version named it otherwise. A kind
    no one provides is left for the lock's validation to name."""
    kind = loaded(group).get(tag if tag is not None else str(pin.get("kind")))
    step = kind.upgrades.get(version) if kind is not None else None
    return step(pin) if step is not None else pin


def kind_of(group: str, form: object) -> Any:
    """The kind of group that form (a kind's manifest entry or its locked form) belongs to."""
    for kind in loaded(group).values():
        if isinstance(form, (kind.spec, kind.locked)):
            return kind
    raise StackbuildError(f"{type(form).__name__} is no {group} kind")
