"""Images pulled from and pushed to registries through a Docker daemon: credentials from the
environment where it names them (else Docker's config), connection errors and 5xx tried again as the
retry policy says, a missing image told apart, and refused credentials one line naming the registry."""

from __future__ import annotations

from collections.abc import Callable

import docker
import docker.errors
import requests

from builder.engine.protocol import EngineError
from builder.model.arch import Arch
from builder.model.retry import RetryPolicy

Login = dict[str, str] | None  # docker-py's auth_config: None, Docker's config's

TRANSIENT = ("connection refused", "connection reset", "timeout", "eof", "502", "503", "504", "500 ", "toomanyrequests")
MISSING = ("manifest unknown", "not found", "no such image")
DENIED = ("unauthorized", "authentication required", "denied", "forbidden")


class _Missing(Exception):
    """The registry has no such image."""


class _TransientTransfer(EngineError):
    """A connection error or a 5xx: worth another try."""


def _classified(action: Callable[[], None], ref: str) -> None:
    registry = ref.split("/", 1)[0]
    try:
        action()
    except (docker.errors.DockerException, requests.RequestException) as err:
        text = str(err).lower()
        if any(word in text for word in DENIED):  # said without what was sent
            message = f"registry {registry} refused the credentials for {ref}: `docker login {registry}`"
            raise EngineError(message) from None
        if any(word in text for word in MISSING):
            raise _Missing(str(err)) from err
        kind = _TransientTransfer if any(word in text for word in TRANSIENT) else EngineError
        raise kind(f"registry transfer of {ref} failed: {err}") from err


def _with_retries(action: Callable[[], None], ref: str, retry: RetryPolicy) -> None:
    """A registry transfer: connection errors and 5xx retried as the policy says; a missing image
    raises _Missing; refused credentials are one line naming the registry."""
    retry.retrying(lambda err: isinstance(err, _TransientTransfer))(_classified, action, ref)


def pulled(client: docker.DockerClient, ref: str, arch: Arch, retry: RetryPolicy, login: Login) -> bool:
    """Pull ref's arch variant into the daemon (login: the credentials sent, None: Docker's config's);
    whether the registry has it."""
    # NAME@sha256:<hex> is pulled by digest: the API takes the digest where a tag would go.
    repository, _, tag = ref.partition("@") if "@" in ref else ref.rpartition(":")

    def once() -> None:
        pulling = client.api.pull(
            repository,
            tag=tag,
            platform=arch.platform,
            stream=True,
            decode=True,
            auth_config=login,
        )
        for event in pulling:
            if "error" in event:
                raise docker.errors.APIError(str(event["error"]))

    try:
        _with_retries(once, ref, retry)
    except _Missing:
        return False
    return True


def pushed(client: docker.DockerClient, ref: str, retry: RetryPolicy, login: Login) -> str:
    """Push the image the daemon has tagged ref (REGISTRY/REPO:TAG); the manifest digest it got."""
    repository, _, tag = ref.rpartition(":")
    digests: list[str] = []

    def once() -> None:
        pushing = client.api.push(repository, tag=tag, stream=True, decode=True, auth_config=login)
        for event in pushing:
            if "error" in event:
                raise docker.errors.APIError(str(event["error"]))
            if digest := (event.get("aux") or {}).get("Digest"):
                digests.append(str(digest))

    try:
        _with_retries(once, ref, retry)
    except _Missing as err:
        raise EngineError(f"cannot push {ref}: {err}") from err
    if not digests:
        raise EngineError(f"cannot push {ref}: the registry reported no digest")
    return digests[-1]
