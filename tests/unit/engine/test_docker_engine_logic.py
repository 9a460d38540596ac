"""The Docker engine's pure parts, no daemon: how a registry transfer's failure is classified and
retried as the policy says, and how Docker's LastTagTime reads."""

from __future__ import annotations

import datetime
from collections.abc import Callable

import docker
import pytest

from builder.engine import EngineError, docker_images, docker_transfer
from builder.model.retry import RetryPolicy

QUICK = RetryPolicy(attempts=3, backoff=0.001)


def failing(*messages: str) -> tuple[list[int], Callable[[], None]]:
    """An action raising the engine's error with each message in turn (then succeeding); its call count."""
    calls: list[int] = []

    def action() -> None:
        calls.append(1)
        if len(calls) <= len(messages):
            raise docker.errors.APIError(messages[len(calls) - 1])

    return calls, action


def test_a_transient_failure_is_tried_again_and_one_that_persists_is_one_line() -> None:
    calls, action = failing("502 Bad Gateway", "connection reset by peer")
    docker_transfer._with_retries(action, "reg.example/team/x:1", QUICK)
    assert len(calls) == 3
    calls, action = failing("503", "503", "503")
    with pytest.raises(EngineError, match=r"^registry transfer of reg.example/team/x:1 failed: 503"):
        docker_transfer._with_retries(action, "reg.example/team/x:1", QUICK)
    assert len(calls) == 3  # the policy's attempts


def test_refused_credentials_and_a_missing_image_are_not_retried() -> None:
    calls, action = failing("unauthorized: authentication required")
    with pytest.raises(
        EngineError, match=r"^registry reg.example refused the credentials .*`docker login reg.example`$"
    ):
        docker_transfer._with_retries(action, "reg.example/team/x:1", QUICK)
    calls2, missing = failing("manifest unknown")
    with pytest.raises(docker_transfer._Missing):
        docker_transfer._with_retries(missing, "reg.example/team/x:1", QUICK)
    assert len(calls) == len(calls2) == 1


def test_last_tag_time_reads_docker_s_rfc3339_with_nanoseconds_and_never_tagged() -> None:
    when = docker_images._tagged_at("2026-12-02T03:04:05.123456789Z")
    expected = datetime.datetime(2026, 12, 2, 3, 4, 5, tzinfo=datetime.timezone.utc).timestamp() + 0.123456789
    assert when == pytest.approx(expected)
    assert docker_images._tagged_at("2026-12-02T11:04:05+08:00") == pytest.approx(expected - 0.123456789)
    assert docker_images._tagged_at("0001-01-01T00:00:00Z") is None  # the engine never tagged it
    assert docker_images._tagged_at("") is None
