"""The distribution API, for what the Docker engine cannot do: read a manifest by tag (or the manifest of
an architecture an index lists), put an image index (docker-py and skopeo 1.9 cannot create one), put
and read blobs. Each answer is checked (a manifest or blob against the digest asked for, a digest read
from the registry by its shape before it is asked for); how requests reach the registry, retried and
authenticated, is `registry_transport`; OCI 1.1 referrers, `registry_referrers`.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit

import requests

from builder.engine.protocol import EngineError
from builder.engine.registry_transport import RegistryTransport, json_object
from builder.model.arch import Arch
from builder.model.retry import RetryPolicy

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
ACCEPT = ", ".join((OCI_INDEX, DOCKER_LIST, OCI_MANIFEST, DOCKER_MANIFEST))
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")  # what a digest read from a registry may be before it goes into a path


@dataclass(frozen=True)
class Descriptor:
    media_type: str
    digest: str
    size: int
    body: bytes = b""

    def entry(self, arch: Arch) -> dict[str, Any]:
        """This manifest as an index entry for arch."""
        return {**self.subject(), "platform": _platform(arch)}

    def subject(self) -> dict[str, Any]:
        """This manifest as the subject a referrer names."""
        return {"mediaType": self.media_type, "digest": self.digest, "size": self.size}


def _platform(arch: Arch) -> dict[str, str]:
    os_name, _, architecture = arch.platform.partition("/")
    platform = {"architecture": architecture, "os": os_name}
    if arch is Arch.AARCH64:
        platform["variant"] = "v8"  # what Docker records for arm64 images
    return platform


def named_digest(value: object, registry: str, where: str) -> str:
    """A digest registry named in what it answered for where, checked by its shape before it is asked for."""
    if not isinstance(value, str) or not DIGEST.match(value):
        raise EngineError(f"registry {registry} named {str(value)[:80]!r} in {where}, not a digest")
    return value


def index_body(entries: list[dict[str, Any]]) -> bytes:
    """An OCI image index of these manifests, serialized once (its digest is of these bytes)."""
    return json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries}, indent=2).encode()


class RegistryClient:
    """One registry host[:port]; repositories are paths under it."""

    def __init__(
        self, registry: str, credentials: Mapping[str, str] | None = None, retry: RetryPolicy | None = None
    ) -> None:
        self.registry = registry
        self.transport = RegistryTransport(registry, credentials, retry)

    def manifest(self, repository: str, reference: str) -> Descriptor | None:
        """The manifest or index at reference (a tag or digest), or None when there is none."""
        response = self.transport.send("GET", repository, f"manifests/{reference}", {"Accept": ACCEPT})
        if response.status_code == 404:
            return None
        self._check(response, repository, reference)
        body = response.content
        digest = f"sha256:{hashlib.sha256(body).hexdigest()}"
        if reference.startswith("sha256:") and digest != reference:
            raise EngineError(
                f"registry {self.registry} answered {repository}@{reference} with another manifest ({digest})"
            )
        media_type = response.headers.get("Content-Type", "").split(";")[0] or json_object(body, self.registry).get(
            "mediaType", ""
        )
        return Descriptor(str(media_type), digest, len(body), body)

    def reach(self, repository: str) -> None:
        """Whether the registry answers and takes the credentials for repository (a repository not pushed
        to yet is fine); EngineError saying which of the two failed."""
        response = self.transport.send("GET", repository, "tags/list", {})
        if response.status_code != 404:
            self._check(response, repository, "tags")

    def put_manifest(self, repository: str, reference: str, body: bytes, media_type: str) -> str:
        """Put a manifest or index under reference; its digest."""
        headers = {"Content-Type": media_type}
        response = self.transport.send("PUT", repository, f"manifests/{reference}", headers, body)
        self._check(response, repository, reference)
        return f"sha256:{hashlib.sha256(body).hexdigest()}"

    def put_blob(self, repository: str, data: bytes) -> str:
        """Upload data as a blob (POST then PUT, the spec's two-step upload) unless it is there; its digest."""
        digest = f"sha256:{hashlib.sha256(data).hexdigest()}"
        if self.transport.send("HEAD", repository, f"blobs/{digest}", {}).status_code == 200:
            return digest
        started = self.transport.send("POST", repository, "blobs/uploads/", {"Content-Length": "0"})
        self._check(started, repository, "a blob upload")
        given = started.headers.get("Location", "")
        location = urljoin(f"{self.transport.base}/{repository}/", given)
        ours, theirs = urlsplit(self.transport.base), urlsplit(location)
        within = posixpath.normpath(theirs.path).startswith(f"{ours.path}/")
        if not given or (theirs.scheme, theirs.netloc) != (ours.scheme, ours.netloc) or not within:
            # the credentials go to this registry's API only
            raise EngineError(f"registry {self.registry} sent no blob upload location of its own ({given[:80]!r})")
        target = f"{location}{'&' if '?' in location else '?'}{urlencode({'digest': digest})}"
        done = self.transport.send("PUT", repository, target, {"Content-Type": "application/octet-stream"}, data)
        self._check(done, repository, digest)
        return digest

    def blob(self, repository: str, digest: str) -> bytes:
        """A blob (at most registry_transport.MAX_BODY: statements and configs, never layers), checked
        against its digest."""
        response = self.transport.send("GET", repository, f"blobs/{digest}", {})
        self._check(response, repository, digest)
        if f"sha256:{hashlib.sha256(response.content).hexdigest()}" != digest:
            raise EngineError(f"registry {self.registry} answered {repository}@{digest} with other bytes")
        return response.content

    def platform_manifest(self, repository: str, reference: str, arch: Arch) -> tuple[Descriptor, ...]:
        """What reference names for arch: the manifest itself, or the index's manifest of arch followed by
        the index (the index alone when it lists none of arch); () when reference names nothing."""
        found = self.manifest(repository, reference)
        if found is None or found.media_type not in (OCI_INDEX, DOCKER_LIST):
            return () if found is None else (found,)
        entries = json_object(found.body, self.registry).get("manifests", [])
        wanted = _platform(arch)
        for entry in entries if isinstance(entries, list) else []:
            platform = entry.get("platform") if isinstance(entry, dict) else None
            # os and architecture: an arm64 image an index lists without Docker's variant is still arm64
            if isinstance(platform, dict) and all(platform.get(k) == wanted[k] for k in ("os", "architecture")):
                image = self.manifest(
                    repository, named_digest(entry.get("digest"), self.registry, f"{repository}:{reference}")
                )
                return (found,) if image is None else (image, found)
        return (found,)

    def _check(self, response: requests.Response, repository: str, reference: str) -> None:
        if response.status_code >= 400:
            detail = response.text.strip().replace("\n", " ")[:300]
            raise EngineError(
                f"registry {self.registry} answered {response.status_code} for {repository}:{reference}: {detail}"
            )
