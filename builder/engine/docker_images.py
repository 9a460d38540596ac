"""The images a Docker daemon holds, by ref: asked after, tagged, removed and listed, each failure of
the daemon an EngineError naming what was asked."""

from __future__ import annotations

import datetime
import re
from typing import Any

import docker
import docker.errors
import requests

from builder.engine.protocol import EngineError, ImageFacts


def image_id(client: docker.DockerClient, ref: str) -> str | None:
    """The image ref names, if the daemon has it."""
    try:
        found: str = client.api.inspect_image(ref)["Id"]
        return found
    except docker.errors.ImageNotFound:
        return None
    except (docker.errors.DockerException, requests.RequestException) as err:
        raise EngineError(f"cannot inspect {ref}: {err}") from err


def image_facts(client: docker.DockerClient, ref: str) -> ImageFacts:
    """What the daemon says of the image ref names (EngineError when it has none)."""
    try:
        data: dict[str, Any] = client.api.inspect_image(ref)
    except (docker.errors.DockerException, requests.RequestException) as err:  # an engine gone mid-build too
        raise EngineError(f"cannot inspect {ref}: {err}") from err
    return ImageFacts(
        id=str(data["Id"]),
        labels=dict((data.get("Config") or {}).get("Labels") or {}),
        size=int(data["Size"]),
        layers=tuple((data.get("RootFS") or {}).get("Layers") or ()),
        tagged_at=_tagged_at(str((data.get("Metadata") or {}).get("LastTagTime") or "")),
    )


def tag_image(client: docker.DockerClient, image: str, ref: str) -> None:
    repository, _, tag = ref.rpartition(":")
    try:
        client.api.tag(image, repository, tag)
    except (docker.errors.DockerException, requests.RequestException) as err:
        raise EngineError(f"cannot tag {image} as {ref}: {err}") from err


def remove_image(client: docker.DockerClient, ref: str) -> None:
    try:
        client.api.remove_image(ref, force=True, noprune=False)
    except docker.errors.NotFound:
        pass
    except (docker.errors.DockerException, requests.RequestException) as err:
        raise EngineError(f"cannot remove {ref}: {err}") from err


def repository_tags(client: docker.DockerClient, repository: str) -> set[str]:
    """Every tag of the repositories matching a glob."""
    try:  # the summaries: one request, where images.list() inspects each image too
        summaries: list[dict[str, Any]] = client.api.images(name=repository)
    except (docker.errors.DockerException, requests.RequestException) as err:
        raise EngineError(f"cannot list the images of {repository}: {err}") from err
    return {tag for s in summaries for tag in s.get("RepoTags") or () if tag != "<none>:<none>"}


def _tagged_at(stamp: str) -> float | None:
    """Docker's LastTagTime: RFC 3339 with nanoseconds; "0001-01-01T00:00:00Z" when the engine never tagged it."""
    found = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)", stamp)
    if found is None or stamp.startswith("0001-"):
        return None
    zone = "+00:00" if found.group(3) == "Z" else found.group(3)
    when = datetime.datetime.fromisoformat(found.group(1) + zone).timestamp()
    return when + float(f"0{found.group(2) or ''}")
