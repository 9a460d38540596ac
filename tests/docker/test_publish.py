"""Publishing to a real registry (Debian's docker-registry on loopback, htpasswd auth): the tags, one
image index per tag, each image's provenance and SBOM beside it, the labels and the embedded lock, read
back with skopeo, the registry's HTTP API and the Docker engine, not only with stackbuild's own code."""

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
from builder.engine.registry_api import OCI_INDEX, OCI_MANIFEST, RegistryClient, index_body
from builder.handoff.sbom import canonical
from builder.model.arch import Arch
from tests.docker.conftest import plan_of, stackbuild, touch
from tests.helpers import CYCLONEDX, IN_TOTO, registry, registry_get

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


def api(address: str, path: str, accept: str = OCI_INDEX) -> bytes | None:
    """GET /v2/<path> of the registry's HTTP API, logged in; None for a 404."""
    return registry_get(address, path, accept, (USER, PASSWORD))


def sha256_tag(body: bytes) -> str:
    """The referrers tag schema's tag for the manifest of these bytes."""
    return f"sha256-{hashlib.sha256(body).hexdigest()}"


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

    # Beside each image of each index, as referrers of its manifest (through the referrers tag schema:
    # this registry has no referrers API), its provenance and its SBOM, read through the registry's
    # HTTP API; the indexes list the images only and have no referrers of their own.
    sboms: dict[str, bytes] = {}
    for tag in (RELEASE, f"{RELEASE}-runtime"):
        body = api(address, f"team/reftest/manifests/{tag}")
        assert body is not None
        listed = json.loads(body)
        assert all("artifactType" not in m for m in listed["manifests"])
        assert api(address, f"team/reftest/manifests/{sha256_tag(body)}") is None
        for image in listed["manifests"]:
            found = api(address, f"team/reftest/manifests/{image['digest'].replace(':', '-')}")
            assert found is not None, f"no referrers of {tag}'s {image['digest']}"
            referrers = {r["artifactType"]: r for r in json.loads(found)["manifests"]}
            assert sorted(referrers) == [CYCLONEDX, IN_TOTO]
            for kind, referrer in referrers.items():
                artifact = json.loads(api(address, f"team/reftest/manifests/{referrer['digest']}", OCI_MANIFEST) or b"")
                assert artifact["subject"]["digest"] == image["digest"] and artifact["artifactType"] == kind
                blob = api(address, f"team/reftest/blobs/{artifact['layers'][0]['digest']}")
                assert blob is not None
                what = "provenance" if kind == IN_TOTO else "SBOM"
                assert re.search(
                    rf"^{re.escape(repository)}@{referrer['digest']}  \S+  \({what} of {image['digest'][:19]}",
                    run.stdout,
                    re.M,
                )
                if kind == IN_TOTO:
                    subjects = [s["digest"]["sha256"] for s in json.loads(blob)["subject"]]
                    assert subjects == [image["digest"].removeprefix("sha256:")]
                else:
                    sboms[tag] = blob

    # The SBOM lists what `inspect` lists of the image (which shows it beside its provenance), and
    # `stackbuild sbom TAG` reads it back: the same bytes as the SBOM made from the image here.
    final_tags = plan_of(workspace, "reftest").final_tags
    for tag, final in ((RELEASE, "devel-image"), (f"{RELEASE}-runtime", "runtime-image")):
        shown = stackbuild(workspace, "inspect", f"{repository}:{tag}", "--json", env=env)
        assert shown.returncode == 0, shown.stderr[-2000:]
        about = json.loads(shown.stdout)
        assert about["sbom"] == json.loads(sboms[tag]) and len(about["provenance"]) == 1
        listed = {c["bom-ref"]: c for c in about["sbom"]["components"]}
        assert {ref for ref in listed if ref.startswith("component:")} == {
            f"component:{c}" for c in about["components"]
        }
        for cid, source in about["components"].items():
            assert listed[f"component:{cid}"]["version"] in (source.get("commit"), source.get("tree_sha256"))
        for role, package in about["toolkit"]["packages"].items():
            assert listed[f"toolkit:{role}"]["hashes"] == [{"alg": "SHA-256", "content": package["sha256"]}]
        debs = {c["name"]: c["version"] for c in listed.values() if c.get("purl", "").startswith("pkg:deb/")}
        assert about["system_packages"] and about["system_packages"].items() <= debs.items()
        wheels = {
            canonical(c["name"]): c["version"] for c in listed.values() if c.get("purl", "").startswith("pkg:pypi/")
        }
        assert {canonical(name): v for name, v in about["python_packages"].items()}.items() <= wheels.items()
        read = stackbuild(workspace, "sbom", f"{repository}:{tag}", env=env)
        assert read.returncode == 0 and read.stdout == sboms[tag].decode() + "\n", read.stderr[-2000:]
        made = stackbuild(workspace, "sbom", final_tags[final], env=env)
        assert made.returncode == 0 and made.stdout == read.stdout, made.stderr[-2000:]

    shown = stackbuild(workspace, "inspect", f"{repository}:{RELEASE}", env=env)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert re.search(r"^provenance    stackbuild \S+, from ", shown.stdout, re.M), shown.stdout
    assert re.search(r"^sbom          CycloneDX 1\.6, \d+ components ", shown.stdout, re.M), shown.stdout

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
    for tag in (runtime, immutable_runtime, RELEASE):  # RELEASE: pulled by inspect
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
