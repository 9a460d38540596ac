"""The Docker engine's pure parts, no daemon: how a registry transfer's failure is classified and
retried as the policy says, how Docker's LastTagTime reads, the `docker run` line people start images
with, what a daemon that does not answer says to do, and the architecture one reports."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import docker
import pytest

from builder.engine import (
    NO_DEVICES,
    DeviceAccess,
    Engine,
    EngineError,
    EngineUnavailable,
    docker_images,
    docker_transfer,
    launcher,
)
from builder.engine.docker_daemon import DockerDaemon
from builder.handoff.doctor import engine_check
from builder.model.arch import Arch
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


def test_the_docker_run_line_puts_its_options_before_the_image_and_the_command_after() -> None:
    access = DeviceAccess(devices=("/dev/davinci0",), read_only_mounts=("/usr/local/dcmi",))
    line = launcher().launch_line("img:1", ["bash", "-c", "x"], access=access, network=False, attach="terminal")
    assert line == [
        *("docker", "run", "--rm", "-it", "--network", "none"),
        *("--device", "/dev/davinci0", "-v", "/usr/local/dcmi:/usr/local/dcmi:ro"),
        *("img:1", "bash", "-c", "x"),
    ]
    assert launcher().launch_line("img:1", [], access=NO_DEVICES) == ["docker", "run", "--rm", "img:1"]


def test_without_a_docker_command_launching_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    with pytest.raises(EngineError, match=r"^no docker command here: install docker.io \(`python -m builder"):
        launcher().launch(launcher().launch_line("img:1", []))


def test_a_daemon_that_does_not_answer_gives_doctor_its_fix(tmp_path: Path) -> None:
    with pytest.raises(EngineUnavailable) as refused:
        DockerDaemon(f"unix://{tmp_path}/no.sock")
    # Every command's message as before; doctor's line the problem, with its fix apart.
    assert str(refused.value).endswith("): run `python -m builder.hostsetup --docker` or start dockerd")
    assert refused.value.problem.startswith("cannot reach the Docker engine (")

    def unreachable() -> Engine:
        raise refused.value

    check, facts = engine_check(unreachable)
    assert (check.verdict, check.detail, facts) == ("fail", refused.value.problem, None)
    assert check.remedy == "python -m builder.hostsetup --docker (installs docker.io and starts dockerd)"


def test_a_socket_this_user_may_not_use_says_to_join_dockers_group(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(**_: object) -> docker.DockerClient:
        raise docker.errors.DockerException("Error while fetching server API version: Permission denied")

    monkeypatch.setattr(docker, "from_env", refused)
    with pytest.raises(EngineUnavailable) as info:
        DockerDaemon()
    assert info.value.remedy == "usermod -aG docker $USER (then log in again), or run as root"


class _Answering:
    """A docker-py client whose daemon runs on machine (its info's Architecture, uname's name)."""

    def __init__(self, machine: str) -> None:
        self.machine = machine

    def ping(self) -> bool:
        return True

    def version(self) -> dict[str, str]:
        return {"Version": "20.10.24", "ApiVersion": "1.41"}

    def info(self) -> dict[str, object]:
        return {"Driver": "overlay2", "DockerRootDir": "/var/lib/docker", "Architecture": self.machine}


@pytest.mark.parametrize(
    ("machine", "arch"), [("x86_64", Arch.X86_64), ("aarch64", Arch.AARCH64), ("arm64", Arch.AARCH64), ("s390x", None)]
)
def test_a_daemon_reports_its_architecture_as_stackbuild_names_it(
    monkeypatch: pytest.MonkeyPatch, machine: str, arch: Arch | None
) -> None:
    monkeypatch.setattr(docker, "from_env", lambda **_: _Answering(machine))
    assert DockerDaemon().facts("BuildKit").arch == arch


def test_a_container_given_npus_gets_the_hosts_npu_group() -> None:
    """The smoke's and probes' containers (docker-py) add the groups as `docker run --group-add` does."""
    from builder.engine.docker_containers import container

    created: dict[str, Any] = {}

    class Made:
        def remove(self, force: bool) -> None: ...

    class Containers:
        def create(self, image: str, command: list[str], **options: Any) -> Made:
            created.update(options)
            return Made()

    client: Any = SimpleNamespace(containers=Containers())
    with container(client, "img", ["true"], None, DeviceAccess(devices=("/dev/davinci0",), groups=(1234,))):
        pass
    assert created["group_add"] == ["1234"] and created["devices"] == ["/dev/davinci0:/dev/davinci0"]
    with container(client, "img", ["true"], None, DeviceAccess()):
        pass
    assert created["group_add"] is None
