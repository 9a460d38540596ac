"""The Docker tier: real engine, real builds of the reference stack in a scratch workspace.

The workspace is a copy of stacks/reference under a stack named `reftest`, so tests can edit
sources without touching the checkout. Images are named under the suite's own prefix and the
download/base cache is the suite's own (tests/conftest.py: TEST_PREFIX, TEST_CACHE); the reference
stack's stage images and that cache stay for the next run, which reuses them. Nothing relies on
images existing beforehand, and what the engine held before the run is there after it
(engine_left_as_found).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import pytest

from builder import lock, manifest
from builder.cli.configuration import cache_root
from builder.engine import EngineError, connect
from builder.engine.docker_engine import DockerEngine
from builder.execute import chain
from builder.execute.chain import Request
from builder.inputs.site import SiteConfig
from builder.model.arch import Arch
from builder.plan.plan_model import Plan
from builder.store.cache import Cache
from tests.conftest import ROOT, TEST_PREFIX


@dataclass(frozen=True)
class EngineState:
    """What an engine holds: its tags, its images (the user's: tagged outside the suite's prefix, or
    dangling, which no tag reaches) and its containers (and the image each is of)."""

    tags: frozenset[str]
    images: frozenset[str]
    users: frozenset[str]
    containers: Mapping[str, str]

    @classmethod
    def of(cls, client: docker.DockerClient) -> EngineState:
        summaries: list[dict[str, Any]] = client.api.images(all=True)
        tags = {t for s in summaries for t in s.get("RepoTags") or () if t != "<none>:<none>"}
        users = {s["Id"] for s in summaries if any(not ours(t) for t in s.get("RepoTags") or ())}
        users |= {s["Id"] for s in client.api.images(filters={"dangling": True})}
        containers = {c["Id"]: c["ImageID"] for c in client.api.containers(all=True)}
        return cls(frozenset(tags), frozenset(s["Id"] for s in summaries), frozenset(users), containers)

    def gone(self, now: EngineState) -> list[str]:
        """What this state held outside the suite's prefix and `now` does not."""
        return sorted(
            [f"tag {t}" for t in self.tags - now.tags if not ours(t)]
            + [f"image {i}" for i in self.users - now.images]
            + [f"container {c}" for c in self.containers.keys() - now.containers.keys()]
        )


def ours(tag: str) -> bool:
    return tag.startswith(f"{TEST_PREFIX}/")


@pytest.fixture(scope="session", autouse=True)
def engine_left_as_found(engine: DockerEngine) -> Iterator[set[str]]:
    """The engine as the run found it: the stopped containers of images the user did not have, the
    dangling images and the tags under the suite's prefix made during the run are removed (but for
    the tags the run keeps for the next one, added to the set it yields), and it fails the run if
    anything else it held is gone."""
    client = engine.client
    before = EngineState.of(client)
    kept: set[str] = set()
    yield kept
    # Stopped only: a running one is another user's of this engine, or still being used.
    for container in client.api.containers(all=True, filters={"status": ["created", "exited", "dead"]}):
        if container["Id"] not in before.containers and container["ImageID"] not in before.users:
            with contextlib.suppress(docker.errors.NotFound):
                client.api.remove_container(container["Id"])
    for summary in client.api.images(all=True):
        made = [t for t in summary.get("RepoTags") or () if ours(t) and t not in before.tags | kept]
        for tag in made:
            with contextlib.suppress(docker.errors.APIError):  # gone meanwhile, or another user's container's
                client.api.remove_image(tag)
    for summary in client.api.images(filters={"dangling": True}):
        if summary["Id"] not in before.images:
            with contextlib.suppress(docker.errors.APIError):  # a parent of an image still here
                client.api.remove_image(summary["Id"])
    gone = before.gone(EngineState.of(client))
    assert not gone, "the Docker tier removed what the engine held before it: " + ", ".join(gone)


@pytest.fixture(scope="session")
def engine() -> DockerEngine:
    try:
        made = connect()
    except EngineError as err:
        pytest.fail(f"the Docker tier needs a running engine: {err}")
    assert isinstance(made, DockerEngine)  # the tier also asks the daemon directly, through its client
    return made


def plan_of(root: Path, stack: str) -> Plan:
    path = root / "stacks" / f"{stack}.yaml"
    locked = lock.read(root / "lockfiles" / f"{stack}.lock.json")
    request = Request(
        manifest.load(path),
        path,
        locked,
        SiteConfig(),
        Cache(cache_root(os.environ)),
        Arch.host(),
        image_prefix=TEST_PREFIX,
    )
    return chain.plan(request, print)


def stackbuild(
    root: Path, *args: str, check: bool = False, timeout: float = 1800, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    run = subprocess.run(
        [sys.executable, "-m", "builder", "--root", str(root), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})),
    )
    if check:
        assert run.returncode == 0, run.stdout + run.stderr
    return run


def write_variant(root: Path, name: str, replacements: list[tuple[str, str]]) -> str:
    """stacks/<name>.yaml: the reference manifest with text replaced (each must apply)."""
    text = (ROOT / "stacks" / "reference.yaml").read_text().replace("name: reference", f"name: {name}")
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new)
    (root / "stacks" / f"{name}.yaml").write_text(text)
    return name


def stage_tags(engine: DockerEngine) -> set[str]:
    return engine.tags(f"{TEST_PREFIX}/stage/*")


@pytest.fixture(scope="session")
def workspace(
    tmp_path_factory: pytest.TempPathFactory, engine: DockerEngine, engine_left_as_found: set[str]
) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("workspace")
    shutil.copytree(
        ROOT / "stacks" / "reference",
        root / "stacks" / "reference",
        ignore=shutil.ignore_patterns("build", "__pycache__", "*.egg-info"),
    )
    write_variant(root, "reftest", [])
    stackbuild(root, "lock", "reftest", check=True)
    yield root
    # The stage images of the unmodified stack stay (the next run reuses them); the ones made for
    # edited sources and variants, and the scratch stacks' final tags, go with the run's other images.
    engine_left_as_found.update(s.tag() for s in plan_of(root, "reftest").order())


def touch(path: Path) -> str:
    """Append a unique comment (unique per run, so no earlier image matches); the old text."""
    old = path.read_text()
    marker = "//" if path.suffix in (".c", ".h") else "#"
    path.write_text(old + f"\n{marker} touched {uuid.uuid4().hex}\n")
    return old


class SecondDaemon:
    """A second Docker daemon (own data root, socket and bridge): a machine the test may restart.

    It gets a bridge of its own: a daemon started with --bridge=none deletes docker0, the
    first daemon's bridge, on its way up."""

    BRIDGE = "sbtest0"

    def __init__(self, base: Path) -> None:
        self.base = base
        self.host = f"unix://{base}/docker.sock"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        if subprocess.run(["ip", "link", "show", self.BRIDGE], capture_output=True).returncode != 0:
            subprocess.run(["ip", "link", "add", self.BRIDGE, "type", "bridge"], check=True)
            subprocess.run(["ip", "addr", "add", "172.31.250.1/24", "dev", self.BRIDGE], check=True)
        log = (self.base / "dockerd.log").open("ab")
        self.proc = subprocess.Popen(
            ["dockerd", "--data-root", f"{self.base}/data", "--exec-root", f"{self.base}/exec", "-H", self.host,
             "--pidfile", f"{self.base}/docker.pid", f"--bridge={self.BRIDGE}", "--iptables=false"],
            stdout=log, stderr=log,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while not reachable_at(self.host):
            assert time.monotonic() < deadline and self.proc.poll() is None, (self.base / "dockerd.log").read_text()[
                -2000:
            ]
            time.sleep(0.3)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=60)

    def remove(self) -> None:
        """Stopped, its bridge and its data gone (a data root is gigabytes, and CI runs a dozen of
        them); its log stays, and what cannot be removed does not hide the test's own failure."""
        self.stop()
        subprocess.run(["ip", "link", "delete", self.BRIDGE], capture_output=True)
        for part in ("data", "exec"):
            shutil.rmtree(self.base / part, ignore_errors=True)


def reachable_at(host: str) -> bool:
    try:
        connect(host)
        return True
    except EngineError:
        return False


def emu_workspace(
    base: Path, arches: tuple[str, ...] = ("x86_64",), replacements: tuple[tuple[str, str], ...] = ()
) -> Path:
    """tests/emu (a small stack on minimal bases) with the reference toolkit beside it, the manifest
    edited, locked for these architectures."""
    root = base / "emu-workspace"
    shutil.copytree(ROOT / "tests" / "emu", root / "stacks")
    shutil.copytree(
        ROOT / "stacks" / "reference" / "toolkit",
        root / "stacks" / "reference" / "toolkit",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    manifest = root / "stacks" / "emu.yaml"
    text = manifest.read_text()
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new)
    manifest.write_text(text)
    locking = stackbuild(root, "lock", "emu", *(f"--arch={arch}" for arch in arches), timeout=2400)
    assert locking.returncode == 0, locking.stderr[-3000:]
    return root


def push_by_digest(client: docker.DockerClient, image: str, repository: str, tag: str) -> str:
    """image pushed as repository:tag; its digest reference. Only the references are dropped afterwards."""
    client.images.get(image).tag(repository, tag)
    for event in client.images.push(repository, tag=tag, stream=True, decode=True):
        assert "error" not in event, event
    digests = client.images.get(f"{repository}:{tag}").attrs["RepoDigests"]
    (reference,) = [d for d in digests if d.startswith(f"{repository}@sha256:")]
    client.images.remove(f"{repository}:{tag}")
    drop(client, reference)
    return str(reference)


def drop(client: docker.DockerClient, reference: str) -> None:
    """The reference gone from the engine (the image stays under its other tags)."""
    with contextlib.suppress(docker.errors.ImageNotFound):
        client.images.remove(reference)
    with pytest.raises(docker.errors.ImageNotFound):
        client.images.get(reference)
