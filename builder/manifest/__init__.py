"""Stack manifests: the model, loading with located errors, the CANN catalog and compatibility."""

from builder.manifest.load import load, manifest_digest
from builder.manifest.model import Manifest

__all__ = ["Manifest", "load", "manifest_digest"]
