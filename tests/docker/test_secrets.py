"""A git token never leaks: a component from a private HTTPS repository (basic auth, TLS, the
token from a git credential helper) is locked, built and smoked, then the token and its
base64 `user:token` form are looked for everywhere stackbuild writes. The registry password of
the environment's credentials (which every command resolves into its settings) is looked for the
same way: in no output, log, provenance record, cache file, label, history or layer.
"""

from __future__ import annotations

import base64
import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

from builder.cli.configuration import cache_root
from builder.engine.docker_engine import DockerEngine
from builder.model.arch import Arch
from builder.store.cache import Cache
from tests.conftest import ROOT
from tests.docker.conftest import plan_of, stackbuild, write_variant
from tests.helpers import git, private_https_git

TOKEN = "ghp_s3cr3tT0kenNeverLogged"
USER = "ci-bot"
REGISTRY_PASSWORD = "regS3cretInTheSettingsOnly"
NEEDLES = (TOKEN.encode(), base64.b64encode(f"{USER}:{TOKEN}".encode()), REGISTRY_PASSWORD.encode())


def leaks(data: bytes) -> list[bytes]:
    return [needle for needle in NEEDLES if needle in data]


def files_with_secrets(root: Path) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and not p.is_symlink() and leaks(p.read_bytes())]


def layers_with_secrets(engine: DockerEngine, image: str) -> list[str]:
    """Every layer of the saved image, and its config (history, labels, env)."""
    saved = io.BytesIO(b"".join(engine.client.images.get(image).save()))
    found = []
    with tarfile.open(fileobj=saved) as outer:
        for member in outer.getmembers():
            if not member.isfile():
                continue
            data = outer.extractfile(member).read()  # type: ignore[union-attr]
            if member.name.endswith("layer.tar"):
                with tarfile.open(fileobj=io.BytesIO(data)) as layer:
                    for entry in layer.getmembers():
                        if entry.isfile() and leaks(layer.extractfile(entry).read()):  # type: ignore[union-attr]
                            found.append(f"{image} {member.name}: {entry.name}")
            elif leaks(data):
                found.append(f"{image} {member.name}")
    return found


def test_a_git_token_reaches_no_output_log_file_label_or_layer(
    workspace: Path, engine: DockerEngine, tmp_path: Path
) -> None:
    cache = Cache(cache_root(os.environ)).root  # the user's cache, as a build uses it
    work = tmp_path / "harness-src"
    shutil.copytree(
        ROOT / "stacks" / "reference" / "harness",
        work,
        ignore=shutil.ignore_patterns("build", "__pycache__", "*.egg-info"),
    )
    git("init", "-q", "-b", "main", cwd=work)
    git("add", ".", cwd=work)
    git("commit", "-q", "-m", "harness", cwd=work)
    repos = tmp_path / "repos"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(repos / "harness.git")], check=True)
    (tmp_path / "certs").mkdir()
    with private_https_git(repos, USER, TOKEN, tmp_path / "certs") as url:
        env = {
            "GIT_SSL_CAINFO": str(tmp_path / "certs" / "cert.pem"),
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "credential.helper",
            "GIT_CONFIG_VALUE_0": f"!f() {{ echo username={USER}; echo password={TOKEN}; }}; f",
            "STACKBUILD_REGISTRY_USERNAME": "ci",
            "STACKBUILD_REGISTRY_PASSWORD": REGISTRY_PASSWORD,
        }
        name = write_variant(
            workspace,
            "reftest-private",
            [("source: {path: reference/harness}", f"source: {{git: '{url}/harness.git', ref: main}}")],
        )
        runs = [
            stackbuild(workspace, "lock", name, env=env),
            stackbuild(workspace, "render", name, "-o", str(tmp_path / "rendered"), env=env),
            stackbuild(workspace, "plan", name, env=env),
            stackbuild(workspace, "build", name, env=env),
            stackbuild(workspace, "lock", "--check", name, env=env),
        ]
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
        assert not leaks((run.stdout + run.stderr).encode()), run.args
    assert "smoke: launch: passed" in runs[3].stderr
    assert files_with_secrets(workspace / ".stackbuild") == []
    assert files_with_secrets(workspace / "lockfiles") == []
    assert files_with_secrets(tmp_path / "rendered") == []
    mirrors = list((cache / "git").glob("*.git"))
    assert mirrors and all(not leaks((m / "config").read_bytes()) for m in mirrors)
    assert files_with_secrets(cache) == []
    plan = plan_of(workspace, name)
    images = [plan.stages["harness"].tag(), *plan.final_tags.values()]
    for image in images:
        assert not leaks(str(engine.inspect(image).labels).encode())
        assert not leaks(str(engine.client.api.history(image)).encode())  # type: ignore[no-untyped-call]
        assert layers_with_secrets(engine, image) == []
    assert f"{Arch.host()}" in plan.final_tags["runtime-image"]
