"""Publishing to a real registry (Debian's docker-registry on loopback, htpasswd auth): the tags, one
image index per tag, the labels and the embedded lock, read back with skopeo and the Docker engine,
not only with stackbuild's own code."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from builder import lock
from builder.engine import connect
from builder.engine.registry_api import OCI_INDEX, RegistryClient, index_body
from builder.model.arch import Arch
from tests.docker.conftest import stackbuild, touch
from tests.helpers import registry

RELEASE = "8.5.0-910b-debian12-py3.11"
USER, PASSWORD = "ci", "publish-" + os.urandom(6).hex()


@pytest.fixture
def published_to(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """A registry wanting a password, and the environment whose Docker config logs in to it."""
    with registry(tmp_path / "registry", users={USER: PASSWORD}) as address:
        config = tmp_path / "docker-config"
        config.mkdir()
        token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        (config / "config.json").write_text(json.dumps({"auths": {address: {"auth": token}}}))
        yield address, {"DOCKER_CONFIG": str(config)}


def skopeo(*args: str) -> str:
    assert shutil.which("skopeo"), "skopeo is installed by `python -m builder.hostsetup --registry`"
    command = ["skopeo", *args[:1], "--tls-verify=false", "--creds", f"{USER}:{PASSWORD}", *args[1:]]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_publish_pushes_one_index_per_tag_with_labels_and_the_lock(
    workspace: Path, published_to: tuple[str, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    address, env = published_to
    monkeypatch.setenv("DOCKER_CONFIG", env["DOCKER_CONFIG"])
    engine = connect()  # logged in to the registry, as a teammate who pulls
    run = stackbuild(
        workspace, "publish", "reftest", "--registry", f"{address}/team", "--arch", "x86_64", "--alias", "latest",
        env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "smoke: launch: passed" in run.stderr
    locked = lock.read(workspace / "lockfiles" / "reftest.lock.json")
    immutable = f"lock-{locked.lock_sha256[:16]}"
    repository = f"{address}/team/reftest"
    for tag in (RELEASE, f"{RELEASE}-runtime", immutable, f"{immutable}-runtime", "latest", "latest-runtime"):
        assert re.search(
            rf"^{re.escape(repository)}:{re.escape(tag)}  sha256:[0-9a-f]{{64}}  \(index", run.stdout, re.M
        )

    # Each tag is an OCI index listing the image for linux/amd64; the release and immutable tags are one index.
    raw = {tag: skopeo("inspect", "--raw", f"docker://{repository}:{tag}") for tag in (RELEASE, immutable)}
    assert raw[RELEASE] == raw[immutable]
    index = json.loads(raw[RELEASE])
    assert index["mediaType"] == OCI_INDEX
    assert [m["platform"] for m in index["manifests"]] == [{"architecture": "amd64", "os": "linux"}]
    printed = re.search(rf"^{re.escape(repository)}:{immutable}  (sha256:\w+)", run.stdout, re.M)
    assert printed and printed.group(1) == "sha256:" + hashlib.sha256(raw[immutable].encode()).hexdigest()

    # The build's provenance is beside the index (a referrer, through the referrers tag schema: this
    # registry has no referrers API), never in it: the index lists the images only.
    referrers = json.loads(skopeo("inspect", "--raw", f"docker://{repository}:{printed.group(1).replace(':', '-')}"))
    (referrer,) = referrers["manifests"]
    assert referrer["artifactType"] == "application/vnd.in-toto+json"
    assert all("artifactType" not in m for m in index["manifests"])
    assert re.search(rf"^{re.escape(repository)}@{referrer['digest']}  \S+  \(provenance of", run.stdout, re.M)

    shown = stackbuild(workspace, "inspect", f"{repository}:{RELEASE}", env=env)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert re.search(r"^provenance    stackbuild \S+, from ", shown.stdout, re.M), shown.stdout

    # The release's own tag is the devel image's, as the official full image's; the runtime's is -runtime.
    devel = json.loads(skopeo("inspect", f"docker://{repository}:{RELEASE}"))["Labels"]
    assert devel["org.opencontainers.image.version"] == RELEASE
    assert devel["org.opencontainers.image.title"] == "reftest devel image"
    labels = json.loads(skopeo("inspect", f"docker://{repository}:{RELEASE}-runtime"))["Labels"]
    assert labels["org.opencontainers.image.version"] == f"{RELEASE}-runtime"
    assert labels["org.opencontainers.image.title"] == "reftest runtime image"
    assert labels["org.opencontainers.image.created"] == "2024-01-01T00:00:00Z"  # the lock's source date
    assert labels["org.stackbuild.lock.sha256"] == locked.lock_sha256
    assert labels["org.stackbuild.toolkit.version"] == "8.5.0"
    harness = next(c for c in locked.components if c.id == "harness")
    assert labels["org.stackbuild.component.harness"] == f"tree {getattr(harness.source, 'tree_sha256', None)}"

    # Pulled by either tag: the same image, holding exactly the lockfile.
    runtime, immutable_runtime = f"{RELEASE}-runtime", f"{immutable}-runtime"
    pulled = {tag: engine.pull(f"{repository}:{tag}", Arch.X86_64) for tag in (runtime, immutable_runtime)}
    assert pulled[runtime] and pulled[runtime] == pulled[immutable_runtime]
    embedded = engine.run(f"{repository}:{runtime}", ["cat", "/etc/stackbuild/stack.lock.json"]).output
    assert embedded == (workspace / "lockfiles" / "reftest.lock.json").read_text()
    for tag in (runtime, immutable_runtime):
        engine.remove(f"{repository}:{tag}")


def test_an_immutable_tag_naming_another_index_is_never_moved(
    workspace: Path, published_to: tuple[str, dict[str, str]]
) -> None:
    address, _ = published_to
    # Credentials from the environment this time (as CI passes secrets), for the push and the index.
    env = {"STACKBUILD_REGISTRY_USERNAME": USER, "STACKBUILD_REGISTRY_PASSWORD": PASSWORD}
    locked = lock.read(workspace / "lockfiles" / "reftest.lock.json")
    immutable = f"lock-{locked.lock_sha256[:16]}"
    client = RegistryClient(address, {"username": USER, "password": PASSWORD})
    other = index_body([])  # an index from "another build" of the same lock
    taken = client.put_manifest("team/reftest", immutable, other, OCI_INDEX)
    run = stackbuild(workspace, "publish", "reftest", "--registry", f"{address}/team", "--arch", "x86_64", env=env)
    assert run.returncode == 1
    errors = [line for line in run.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and f"already names {taken}" in errors[0] and "never moved" in errors[0], run.stderr
    # The image itself went up with the environment's credentials (before the index was refused).
    assert client.manifest("team/reftest", f"{RELEASE}-x86_64") is not None
    assert client.manifest("team/reftest", immutable).digest == taken  # type: ignore[union-attr]
    assert client.manifest("team/reftest", RELEASE) is None  # no index was put anywhere
    assert PASSWORD not in run.stdout + run.stderr


def test_publish_refuses_a_working_tree_that_differs_from_the_lock(
    workspace: Path, published_to: tuple[str, dict[str, str]]
) -> None:
    address, env = published_to
    source = workspace / "stacks" / "reference" / "harness" / "harness" / "__init__.py"
    old = touch(source)
    try:
        run = stackbuild(workspace, "publish", "reftest", "--registry", f"{address}/team", "--arch", "x86_64", env=env)
    finally:
        source.write_text(old)
    assert run.returncode == 1
    assert "path sources differ from the lock and --frozen is set" in run.stderr
    client = RegistryClient(address, {"username": USER, "password": PASSWORD})
    assert client.manifest("team/reftest", RELEASE) is None
