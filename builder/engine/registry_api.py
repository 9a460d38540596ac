"""The distribution API, for what the Docker engine cannot do: read a manifest by tag, put an image
index (docker-py and skopeo 1.9 cannot create one), and attach an artifact to it as an OCI 1.1
referrer (blobs, the referrers API where the registry has it, else the referrers tag schema).

One retrying client: connection errors and 5xx are retried with backoff; 401/403 after
authenticating is one line naming the registry, never what was sent. Credentials come from
Docker's config (`docker login`, credential helpers included, read through docker-py).
Loopback registries are spoken to over plain HTTP, as the Docker engine does; others over HTTPS.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit

import docker.auth
import docker.errors
import requests

from builder.engine.protocol import EngineError, registry_credentials
from builder.model.arch import Arch
from builder.model.retry import RetryPolicy

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
ACCEPT = ", ".join((OCI_INDEX, DOCKER_LIST, OCI_MANIFEST, DOCKER_MANIFEST))
DOCKER_HUB_API = "registry-1.docker.io"  # where docker.io's distribution API answers
CHALLENGE_PARAM = re.compile(r'(\w+)="([^"]*)"')


class _Transient(EngineError):
    """A connection error or a 5xx: worth another try."""


@dataclass(frozen=True)
class Descriptor:
    media_type: str
    digest: str
    size: int
    body: bytes = b""

    def entry(self, arch: Arch) -> dict[str, Any]:
        """This manifest as an index entry for arch."""
        os_name, _, architecture = arch.platform.partition("/")
        platform = {"architecture": architecture, "os": os_name}
        if arch is Arch.AARCH64:
            platform["variant"] = "v8"  # what Docker records for arm64 images
        return {"mediaType": self.media_type, "digest": self.digest, "size": self.size, "platform": platform}


def index_body(entries: list[dict[str, Any]]) -> bytes:
    """An OCI image index of these manifests, serialized once (its digest is of these bytes)."""
    return json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries}, indent=2).encode()


def _is_loopback(registry: str) -> bool:
    if registry.startswith("["):  # [::1]:5000
        host = registry[1:].partition("]")[0]
    else:
        host = registry.rpartition(":")[0] if ":" in registry else registry
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


MAX_BODY = 4 << 20  # the distribution spec's limit for a manifest; token answers are far smaller


def _capped(response: requests.Response) -> requests.Response:
    """The response with its body read, at most MAX_BODY of it (a registry cannot fill the memory)."""
    data = b""
    with response:  # iter_content says a broken transfer as requests' own errors, which are retried
        for chunk in response.iter_content(64 << 10):
            data += chunk
            if len(data) > MAX_BODY:
                break
    if len(data) > MAX_BODY:
        raise EngineError(f"{response.url.split('?')[0]} answered more than {MAX_BODY >> 20} MiB")
    response._content = data  # what .content and .text give from now on
    return response


def _json(body: bytes, registry: str) -> dict[str, Any]:
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise EngineError(f"registry {registry} answered something that is not a JSON object")
    return document


class RegistryClient:
    """One registry host[:port]; repositories are paths under it."""

    def __init__(
        self, registry: str, credentials: Mapping[str, str] | None = None, retry: RetryPolicy | None = None
    ) -> None:
        self.retry = retry or RetryPolicy()
        self.registry = registry
        api_host = DOCKER_HUB_API if registry in ("docker.io", "index.docker.io") else registry
        self.base = f"{'http' if _is_loopback(registry) else 'https'}://{api_host}/v2"
        self.session = requests.Session()
        try:
            found = credentials if credentials is not None else registry_credentials(registry)
            found = found if found is not None else docker.auth.load_config().resolve_authconfig(registry)
        except docker.errors.DockerException as err:  # a credential helper that fails or is missing
            raise EngineError(f"cannot read the credentials for {registry} from Docker's config: {err}") from None
        found = {k.lower(): v for k, v in (found or {}).items()}
        self._user, self._password = found.get("username"), found.get("password")
        self._authorization: dict[str, str] = {}  # repository -> Authorization header

    def manifest(self, repository: str, reference: str) -> Descriptor | None:
        """The manifest or index at reference (a tag or digest), or None when there is none."""
        response = self._retrying("GET", repository, f"manifests/{reference}", {"Accept": ACCEPT})
        if response.status_code == 404:
            return None
        self._check(response, repository, reference)
        body = response.content
        digest = f"sha256:{hashlib.sha256(body).hexdigest()}"
        if reference.startswith("sha256:") and digest != reference:
            raise EngineError(
                f"registry {self.registry} answered {repository}@{reference} with another manifest ({digest})"
            )
        media_type = response.headers.get("Content-Type", "").split(";")[0] or _json(body, self.registry).get(
            "mediaType", ""
        )
        return Descriptor(str(media_type), digest, len(body), body)

    def reach(self, repository: str) -> None:
        """Whether the registry answers and takes the credentials for repository (a repository not pushed
        to yet is fine); EngineError saying which of the two failed."""
        response = self._retrying("GET", repository, "tags/list", {})
        if response.status_code != 404:
            self._check(response, repository, "tags")

    def put_manifest(self, repository: str, reference: str, body: bytes, media_type: str) -> str:
        """Put a manifest or index under reference; its digest."""
        headers = {"Content-Type": media_type}
        response = self._retrying("PUT", repository, f"manifests/{reference}", headers, body)
        self._check(response, repository, reference)
        return f"sha256:{hashlib.sha256(body).hexdigest()}"

    def put_blob(self, repository: str, data: bytes) -> str:
        """Upload data as a blob (POST then PUT, the spec's two-step upload) unless it is there; its digest."""
        digest = f"sha256:{hashlib.sha256(data).hexdigest()}"
        if self._retrying("HEAD", repository, f"blobs/{digest}", {}).status_code == 200:
            return digest
        started = self._retrying("POST", repository, "blobs/uploads/", {"Content-Length": "0"})
        self._check(started, repository, "a blob upload")
        given = started.headers.get("Location", "")
        location = urljoin(f"{self.base}/{repository}/", given)
        ours, theirs = urlsplit(self.base), urlsplit(location)
        within = posixpath.normpath(theirs.path).startswith(f"{ours.path}/")
        if not given or (theirs.scheme, theirs.netloc) != (ours.scheme, ours.netloc) or not within:
            # the credentials go to this registry's API only
            raise EngineError(f"registry {self.registry} sent no blob upload location of its own ({given[:80]!r})")
        target = f"{location}{'&' if '?' in location else '?'}{urlencode({'digest': digest})}"
        done = self._retrying("PUT", repository, target, {"Content-Type": "application/octet-stream"}, data)
        self._check(done, repository, digest)
        return digest

    def blob(self, repository: str, digest: str) -> bytes:
        """A blob (at most MAX_BODY: statements and configs, never layers), checked against its digest."""
        response = self._retrying("GET", repository, f"blobs/{digest}", {})
        self._check(response, repository, digest)
        if f"sha256:{hashlib.sha256(response.content).hexdigest()}" != digest:
            raise EngineError(f"registry {self.registry} answered {repository}@{digest} with other bytes")
        return response.content

    def referrers(self, repository: str, digest: str) -> list[dict[str, Any]]:
        """The descriptors of what refers to digest: the referrers API's index, else the referrers tag's."""
        response = self._referrers_api(repository, digest)
        if response is not None:
            found = _json(response.content, self.registry).get("manifests", [])
        else:
            tagged = self.manifest(repository, digest.replace(":", "-"))
            found = _json(tagged.body, self.registry).get("manifests", []) if tagged is not None else []
        return [entry for entry in found if isinstance(entry, dict)]

    def has_referrers_api(self, repository: str, digest: str) -> bool:
        """Whether the registry answers the OCI 1.1 referrers API (else: the referrers tag schema)."""
        return self._referrers_api(repository, digest) is not None

    def _referrers_api(self, repository: str, digest: str) -> requests.Response | None:
        """The referrers API's answer for digest, or None where the registry has no such API."""
        response = self._retrying("GET", repository, f"referrers/{digest}", {"Accept": OCI_INDEX})
        ok = response.status_code == 200 and response.headers.get("Content-Type", "").startswith(OCI_INDEX)
        return response if ok else None

    def _check(self, response: requests.Response, repository: str, reference: str) -> None:
        if response.status_code >= 400:
            detail = response.text.strip().replace("\n", " ")[:300]
            raise EngineError(
                f"registry {self.registry} answered {response.status_code} for {repository}:{reference}: {detail}"
            )

    def _retrying(
        self, method: str, repository: str, path: str, headers: dict[str, str], body: bytes | None = None
    ) -> requests.Response:
        retrying = self.retry.retrying(lambda err: isinstance(err, _Transient))
        try:
            return retrying(self._send, method, repository, path, headers, body)
        except _Transient as err:
            raise EngineError(f"registry {self.registry}: {err}") from None

    def _send(
        self, method: str, repository: str, path: str, headers: dict[str, str], body: bytes | None
    ) -> requests.Response:
        # path: below the repository, or an upload location already checked to be on this registry
        url = path if path.startswith(self.base) else f"{self.base}/{repository}/{path}"
        try:
            response = self._request(method, url, repository, headers, body)
            if response.status_code == 401:
                self._authenticate(response.headers.get("WWW-Authenticate", ""), repository)
                response = self._request(method, url, repository, headers, body)
        except requests.RequestException as err:  # the message names the URL only: no credentials are in it
            raise _Transient(f"cannot reach it: {type(err).__name__}") from None
        self._judge(response, repository, "it")
        return response

    def _judge(self, response: requests.Response, repository: str, who: str) -> None:
        """Refused credentials: one line without them; a 5xx: worth another try."""
        if response.status_code in (401, 403):
            raise EngineError(
                f"registry {self.registry} refused the credentials for {repository}: `docker login {self.registry}`"
            )
        if response.status_code >= 500:
            raise _Transient(f"{who} answered {response.status_code}")

    def _request(
        self, method: str, url: str, repository: str, headers: dict[str, str], body: bytes | None
    ) -> requests.Response:
        auth = {"Authorization": self._authorization[repository]} if repository in self._authorization else {}
        return _capped(
            self.session.request(method, url, headers={**headers, **auth}, data=body, timeout=120, stream=True)
        )

    def _may_send_to(self, realm: str) -> bool:
        """The password goes to a token realm only over TLS, or over the plain HTTP this client speaks to
        a loopback registry at that very host and port: never in clear to another address."""
        try:
            parts = urlsplit(realm)
            same = parts.netloc == self.registry and self.base.startswith("http://")
            return parts.scheme == "https" or (parts.scheme == "http" and same)
        except ValueError:  # a realm that is not a URL
            return False

    def _authenticate(self, challenge: str, repository: str) -> None:
        """Answer the registry's challenge: Basic with the credentials, or a Bearer token from its realm."""
        scheme, _, params_text = challenge.partition(" ")
        # Anonymous tokens exist; anonymous basic does not.
        if (self._user is None or self._password is None) and scheme.lower() != "bearer":
            raise EngineError(
                f"registry {self.registry} wants credentials for {repository}: `docker login {self.registry}`"
            )
        if scheme.lower() == "basic":
            pair = base64.b64encode(f"{self._user}:{self._password}".encode()).decode()
            self._authorization[repository] = f"Basic {pair}"
            return
        params = dict(CHALLENGE_PARAM.findall(params_text))
        if scheme.lower() != "bearer" or "realm" not in params:
            raise EngineError(f"registry {self.registry} asks for an authentication this client does not speak")
        query = {"service": params.get("service", ""), "scope": f"repository:{repository}:pull,push"}
        realm = params["realm"]
        auth = (self._user, self._password) if self._user and self._password and self._may_send_to(realm) else None
        answer = _capped(self.session.get(realm, params=query, auth=auth, timeout=60, stream=True))
        self._judge(answer, repository, "its token service")
        document = _json(answer.content, self.registry)
        token = document.get("token") or document.get("access_token")
        if not token:
            raise EngineError(f"registry {self.registry}: its token service gave no token")
        self._authorization[repository] = f"Bearer {token}"
