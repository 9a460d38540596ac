"""Stack manifests: the model, loading with located errors, the CANN catalog and compatibility.

`load`, `manifest_digest` and `Manifest` are loaded on first use: the manifest's source union is
made of the source kinds (builder.inputs.source_kinds), and a kind's module imports this package's
bases and types, so importing the package itself must not build the Manifest."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from builder.manifest.loading import load, manifest_digest
    from builder.manifest.model import Manifest

__all__ = ["Manifest", "load", "manifest_digest"]


def __getattr__(name: str) -> Any:
    if name in ("load", "manifest_digest"):
        from builder.manifest import loading

        return getattr(loading, name)
    if name == "Manifest":
        from builder.manifest.model import Manifest

        return Manifest
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
