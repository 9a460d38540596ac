"""The distribution API client against HTTP servers on loopback that answer as registries do:
Basic and Bearer challenges, 5xx retried with backoff, refused credentials in one line without them.
(The real registry is in tests/docker/test_publish.py.)"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import os
from pathlib import Path

import pytest

from builder.cli import publishing as cli_publishing
from builder.cli.configuration import resolve
from builder.cli.context import Context
from builder.engine.protocol import EngineError
from builder.engine.registry_api import (
    OCI_INDEX,
    OCI_MANIFEST,
    Descriptor,
    RegistryClient,
    index_body,
)
from builder.model.arch import Arch
from builder.model.errors import InputError
from builder.model.registry import registry_of
from builder.model.retry import RetryPolicy
from builder.model.settings import RegistryCredentials, login_for
from tests.fake_registry import Answer, Store, server
from tests.helpers import run_cli


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_basic_challenge_is_answered_and_the_manifest_read() -> None:
    body = index_body([])

    def answer(request: http.server.BaseHTTPRequestHandler) -> Answer:
        if request.headers.get("Authorization") != basic("ci", "right"):
            return 401, {"WWW-Authenticate": 'Basic realm="test"'}, b""
        return 200, {"Content-Type": OCI_INDEX}, body

    with server(answer) as (address, seen):
        found = RegistryClient(address, {"username": "ci", "password": "right"}).manifest("team/x", "v1")
    assert found is not None and found.media_type == OCI_INDEX and found.body == body and found.size == len(body)
    assert seen[0].endswith(" -") and seen[1].endswith(basic("ci", "right"))


def test_bearer_tokens_come_from_the_realm_with_the_credentials() -> None:
    def answer(request: http.server.BaseHTTPRequestHandler) -> Answer:
        if request.path.startswith("/token"):
            assert request.headers.get("Authorization") == basic("ci", "right")
            assert "scope=repository%3Ateam%2Fx%3Apull%2Cpush" in request.path
            return 200, {}, json.dumps({"token": "tok"}).encode()
        if request.headers.get("Authorization") != "Bearer tok":
            realm = f'Bearer realm="http://{request.headers["Host"]}/token",service="test"'
            return 401, {"WWW-Authenticate": realm}, b""
        return 201, {}, b""

    with server(answer) as (address, seen):
        digest = RegistryClient(address, {"username": "ci", "password": "right"}).put_manifest(
            "team/x", "v1", b"{}", OCI_INDEX
        )
    assert digest.startswith("sha256:") and [s.split()[0] for s in seen] == ["PUT", "GET", "PUT"]


def test_credentials_from_the_environment_come_first(tmp_path: Path) -> None:
    def answer(request: http.server.BaseHTTPRequestHandler) -> Answer:
        if request.headers.get("Authorization") != basic("ci", "from-env"):
            return 401, {"WWW-Authenticate": 'Basic realm="test"'}, b""
        return 404, {}, b""

    env = {"STACKBUILD_REGISTRY_USERNAME": "ci", "STACKBUILD_REGISTRY_PASSWORD": "from-env", "HOME": str(tmp_path)}
    login = resolve(env, tmp_path).credentials
    with server(answer) as (address, _):
        assert RegistryClient(address, login_for(login, address)).manifest("team/x", "v1") is None  # a plain 404
    del env["STACKBUILD_REGISTRY_PASSWORD"]
    with pytest.raises(InputError, match="set both STACKBUILD_REGISTRY_USERNAME and STACKBUILD_REGISTRY_PASSWORD"):
        resolve(env, tmp_path)


def test_refused_credentials_are_one_line_without_them() -> None:
    def answer(request: http.server.BaseHTTPRequestHandler) -> Answer:
        return 401, {"WWW-Authenticate": 'Basic realm="test"'}, b'{"errors":[{"code":"UNAUTHORIZED"}]}'

    with server(answer) as (address, _), pytest.raises(EngineError) as info:
        RegistryClient(address, {"username": "ci", "password": "s3cret-pw"}).manifest("team/x", "v1")
    message = str(info.value)
    assert message == f"registry {address} refused the credentials for team/x: `docker login {address}`"
    assert "s3cret-pw" not in message and "\n" not in message


def test_server_errors_are_retried_then_reported() -> None:
    answers = iter([503, 502, 404])

    def flaky(request: http.server.BaseHTTPRequestHandler) -> Answer:
        return next(answers), {}, b""

    patient = RetryPolicy(attempts=4, backoff=0.01)  # the default's attempts, without its waits
    with server(flaky) as (address, seen):
        assert RegistryClient(address, {}, patient).manifest("team/x", "v1") is None
    assert len(seen) == 3

    with server(lambda request: (500, {}, b"")) as (address, seen), pytest.raises(EngineError, match="answered 500"):
        RegistryClient(address, {}, patient).manifest("team/x", "v1")
    assert len(seen) == 4  # tried four times
    assert RegistryClient(address, {}).transport.retry.attempts == 4


def test_index_entries_name_dockers_platforms() -> None:
    entry = Descriptor("application/vnd.docker.distribution.manifest.v2+json", "sha256:" + "a" * 64, 7).entry(
        Arch.AARCH64
    )
    assert entry["platform"] == {"architecture": "arm64", "os": "linux", "variant": "v8"}


@pytest.mark.parametrize("realm_host", ["127.0.0.2", "127.0.0.1"])  # another address; the same one, another port
def test_a_realm_elsewhere_over_plain_http_gets_no_password(realm_host: str) -> None:
    def token(request: http.server.BaseHTTPRequestHandler) -> Answer:
        return 200, {}, json.dumps({"token": "anonymous"}).encode()

    with server(token, host=realm_host) as (realm, seen_by_realm):

        def registry(request: http.server.BaseHTTPRequestHandler) -> Answer:
            if request.headers.get("Authorization") != "Bearer anonymous":
                return 401, {"WWW-Authenticate": f'Bearer realm="http://{realm}/token",service="x"'}, b""
            return 404, {}, b""

        with server(registry) as (address, _):
            assert RegistryClient(address, {"username": "ci", "password": "s3cret-pw"}).manifest("t/x", "v1") is None
    assert len(seen_by_realm) == 1 and seen_by_realm[0].endswith(" -"), seen_by_realm  # no Authorization at all


def test_environment_credentials_go_only_to_the_registry_they_name(monkeypatch: pytest.MonkeyPatch) -> None:
    def answer(request: http.server.BaseHTTPRequestHandler) -> Answer:
        return 401, {"WWW-Authenticate": 'Basic realm="test"'}, b""

    login = RegistryCredentials("ci", "from-env", "registry.internal:5000")
    monkeypatch.setenv("DOCKER_CONFIG", "/nonexistent")  # no Docker login either
    with server(answer) as (address, seen), pytest.raises(EngineError, match="wants credentials"):
        RegistryClient(address, login_for(login, address)).manifest("team/x", "v1")
    assert all("from-env" not in line and basic("ci", "from-env") not in line for line in seen)
    assert login_for(login, "registry.internal:5000") == {"username": "ci", "password": "from-env"}
    assert login_for(login, address) is None


def test_a_manifest_fetched_by_digest_must_hash_to_it() -> None:
    body = index_body([])
    wanted = "sha256:" + "0" * 64
    with server(lambda request: (200, {"Content-Type": OCI_INDEX}, body)) as (address, _):
        with pytest.raises(EngineError, match="with another manifest"):
            RegistryClient(address, {}).manifest("team/x", wanted)
        found = RegistryClient(address, {}).manifest("team/x", f"sha256:{hashlib.sha256(body).hexdigest()}")
    assert found is not None and found.body == body


def test_bodies_are_capped_and_bad_json_is_one_line() -> None:
    huge = b"{" + b" " * (5 << 20) + b"}"
    with server(lambda request: (200, {}, huge)) as (address, _), pytest.raises(EngineError, match="more than 4 MiB"):
        RegistryClient(address, {}).manifest("team/x", "v1")
    with server(lambda request: (200, {}, b"[1, 2")) as (address, _), pytest.raises(EngineError) as err:
        RegistryClient(address, {}).manifest("team/x", "v1")
    assert str(err.value) == f"registry {address} answered something that is not a JSON object"


@pytest.fixture
def ci_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The environment's registry credentials, as CI passes secrets, for no registry in particular."""
    monkeypatch.setenv("STACKBUILD_REGISTRY_USERNAME", "ci")
    monkeypatch.setenv("STACKBUILD_REGISTRY_PASSWORD", "from-env")
    monkeypatch.delenv("STACKBUILD_REGISTRY_HOST", raising=False)
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))


@pytest.mark.usefixtures("ci_credentials")
def test_environment_credentials_without_a_host_are_for_the_one_registry_the_command_names(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[dict[str, str] | None] = []

    def publishing(ctx: Context, args: object) -> int:
        seen.append(login_for(ctx.settings.credentials, "publish.internal:5000"))
        seen.append(login_for(ctx.settings.credentials, "cache.internal:5000"))
        return 0

    monkeypatch.setattr(cli_publishing, "cmd_publish", publishing)
    code, _, _ = run_cli(capsys, "publish", "reference", "--registry", "publish.internal:5000/team")
    assert code == 0 and seen == [{"username": "ci", "password": "from-env"}, None]
    assert "STACKBUILD_REGISTRY_HOST" not in os.environ  # a value passed down, never written to the environment

    code, _, err = run_cli(
        capsys,
        "publish",
        "reference",
        "--registry",
        "publish.internal:5000/team",
        "--cache-from",
        "cache.internal:5000/c",
    )
    assert code == 2 and "would go to cache.internal:5000 and publish.internal:5000" in err and "\n" not in err.strip()


@pytest.mark.usefixtures("ci_credentials")
def test_the_site_cache_a_command_uses_unasked_counts_as_a_registry_it_names(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    site = tmp_path / "site.yaml"
    site.write_text("cache_registry: cache.internal:5000/c\n")
    monkeypatch.setenv("STACKBUILD_SITE_CONFIG", str(site))
    monkeypatch.setattr(cli_publishing, "cmd_publish", lambda ctx, args: 0)
    code, _, err = run_cli(capsys, "publish", "reference", "--registry", "publish.internal:5000/team")
    assert code == 2 and "would go to cache.internal:5000 and publish.internal:5000" in err


def test_a_registry_is_named_as_the_engine_names_it() -> None:
    assert registry_of("myorg/cache") == "docker.io"  # no host: Docker Hub's, for scoping and pushes alike
    assert registry_of("localhost:5000/c") == "localhost:5000" and registry_of("[::1]:5000/c/x:t") == "[::1]:5000"


@pytest.mark.parametrize(
    "location",
    ["http://127.0.0.2:{port}/v2/team/x/blobs/uploads/1", "/v2/../elsewhere/1", "", "http://127.0.0.1:{port}/o/1"],
    ids=["another-host", "out-of-the-api", "none", "another-path"],
)
def test_a_blob_upload_goes_only_to_the_registrys_own_api(location: str) -> None:
    """The upload Location a registry answers with gets the credentials: one on another host, outside
    /v2/, or none at all is refused before any byte or credential is sent there."""

    def answer(request: http.server.BaseHTTPRequestHandler) -> Answer:
        if request.headers.get("Authorization") != basic("ci", "right"):
            return 401, {"WWW-Authenticate": 'Basic realm="test"'}, b""
        if request.command == "HEAD":
            return 404, {}, b""
        return 202, {"Location": location.format(port=where["address"].rpartition(":")[2])}, b""

    where: dict[str, str] = {}
    with server(answer) as (address, seen):
        where["address"] = address
        client = RegistryClient(address, {"username": "ci", "password": "right"})
        with pytest.raises(EngineError, match="no blob upload location of its own"):
            client.put_blob("team/x", b"statement")
    assert not [line for line in seen if line.startswith("PUT")]


def test_a_blob_upload_follows_the_registrys_location_with_the_digest() -> None:
    """Distribution answers an absolute Location with a query string: the digest is added to it."""
    data = b"a statement"
    digest = f"sha256:{hashlib.sha256(data).hexdigest()}"

    def answer(request: http.server.BaseHTTPRequestHandler) -> Answer:
        if request.command == "HEAD":
            return 404, {}, b""
        if request.command == "POST":
            return 202, {"Location": f"http://{where['address']}/v2/team/x/blobs/uploads/u1?_state=abc"}, b""
        ok = request.path == f"/v2/team/x/blobs/uploads/u1?_state=abc&digest={digest.replace(':', '%3A')}"
        return (201 if ok and getattr(request, "body", b"") == data else 400), {}, b""

    where: dict[str, str] = {}
    with server(answer) as (address, seen):
        where["address"] = address
        assert RegistryClient(address, {}).put_blob("team/x", data) == digest
    assert [line.split()[0] for line in seen] == ["HEAD", "POST", "PUT"]


def _image(client: RegistryClient, marker: str) -> Descriptor:
    """A stand-in image manifest put into team/x; its descriptor as the registry gives it."""
    body = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "marker": marker}).encode()
    found = client.manifest("team/x", client.put_manifest("team/x", marker, body, OCI_MANIFEST))
    assert found is not None
    return found


def test_the_manifest_of_an_architecture_is_found_through_its_index() -> None:
    store = Store()
    with server(store.answer) as (address, _):
        client = RegistryClient(address, {}, RetryPolicy(attempts=1))
        amd64, arm64 = _image(client, "amd64"), _image(client, "arm64")
        index_digest = client.put_manifest(
            "team/x", "both", index_body([arm64.entry(Arch.AARCH64), amd64.entry(Arch.X86_64)]), OCI_INDEX
        )
        client.put_manifest("team/x", "amd64-only", index_body([amd64.entry(Arch.X86_64)]), OCI_INDEX)
        found = client.platform_manifest("team/x", "both", Arch.X86_64)
        assert [d.digest for d in found] == [amd64.digest, index_digest]
        assert [d.digest for d in client.platform_manifest("team/x", "both", Arch.AARCH64)] == [
            arm64.digest,
            index_digest,
        ]
        assert [d.media_type for d in client.platform_manifest("team/x", "amd64-only", Arch.AARCH64)] == [OCI_INDEX]
        assert client.platform_manifest("team/x", "arm64", Arch.X86_64) == (arm64,)  # a manifest is itself
        assert client.platform_manifest("team/x", "absent", Arch.X86_64) == ()
        plain = {**arm64.entry(Arch.AARCH64), "platform": {"architecture": "arm64", "os": "linux"}}  # no variant
        client.put_manifest("team/x", "plain", index_body([plain]), OCI_INDEX)
        assert client.platform_manifest("team/x", "plain", Arch.AARCH64)[0] == arm64
