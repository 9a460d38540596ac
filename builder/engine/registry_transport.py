"""How the distribution API client speaks to one registry: requests retried (connection errors and
5xx, with backoff), bodies capped, and the registry's challenge answered (Basic with the credentials,
or a Bearer token from its realm, the password sent only over TLS or to a loopback registry itself);
401/403 after authenticating is one line naming the registry, never what was sent. Credentials are the
caller's (the settings' login for this registry) when given, else Docker's config (`docker login`, credential helpers
included, read through docker-py). Loopback registries are spoken to over plain HTTP, as the Docker
engine does; others over HTTPS."""

from __future__ import annotations

import base64
import ipaddress
import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import docker.auth
import docker.errors
import requests

from builder.engine.protocol import EngineError
from builder.model.retry import RetryPolicy

DOCKER_HUB_API = "registry-1.docker.io"  # where docker.io's distribution API answers
CHALLENGE_PARAM = re.compile(r'(\w+)="([^"]*)"')
MAX_BODY = 4 << 20  # the distribution spec's limit for a manifest; token answers are far smaller


class _TransientAnswer(EngineError):
    """A connection error or a 5xx: worth another try."""


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


def json_object(body: bytes, registry: str) -> dict[str, Any]:
    """body as a JSON object; EngineError naming the registry when it is not one."""
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise EngineError(f"registry {registry} answered something that is not a JSON object")
    return document


class RegistryTransport:
    """Requests to one registry host[:port]'s API, authenticated per repository."""

    def __init__(
        self, registry: str, credentials: Mapping[str, str] | None = None, retry: RetryPolicy | None = None
    ) -> None:
        self.retry = retry or RetryPolicy()
        self.registry = registry
        api_host = DOCKER_HUB_API if registry in ("docker.io", "index.docker.io") else registry
        self.base = f"{'http' if _is_loopback(registry) else 'https'}://{api_host}/v2"
        self.session = requests.Session()
        try:
            found = credentials if credentials is not None else docker.auth.load_config().resolve_authconfig(registry)
        except docker.errors.DockerException as err:  # a credential helper that fails or is missing
            raise EngineError(f"cannot read the credentials for {registry} from Docker's config: {err}") from None
        found = {k.lower(): v for k, v in (found or {}).items()}
        self._user, self._password = found.get("username"), found.get("password")
        self._authorization: dict[str, str] = {}  # repository -> Authorization header

    def send(
        self, method: str, repository: str, path: str, headers: dict[str, str], body: bytes | None = None
    ) -> requests.Response:
        """The registry's answer to a request below repository (or at an upload location it gave), tried
        again as the retry policy says; EngineError for refused credentials or one it never gave."""
        retrying = self.retry.retrying(lambda err: isinstance(err, _TransientAnswer))
        try:
            return retrying(self._send, method, repository, path, headers, body)
        except _TransientAnswer as err:
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
            raise _TransientAnswer(f"cannot reach it: {type(err).__name__}") from None
        self._judge(response, repository, "it")
        return response

    def _judge(self, response: requests.Response, repository: str, who: str) -> None:
        """Refused credentials: one line without them; a 5xx: worth another try."""
        if response.status_code in (401, 403):
            raise EngineError(
                f"registry {self.registry} refused the credentials for {repository}: `docker login {self.registry}`"
            )
        if response.status_code >= 500:
            raise _TransientAnswer(f"{who} answered {response.status_code}")

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
        document = json_object(answer.content, self.registry)
        token = document.get("token") or document.get("access_token")
        if not token:
            raise EngineError(f"registry {self.registry}: its token service gave no token")
        self._authorization[repository] = f"Bearer {token}"
