"""A kind of source added as one module, registered as every plug-in is (an entry point of the group
`stackbuild.sources` in a distribution's metadata), touching no file under builder/: the manifest
accepts it, the schema shows it, and lock, render and vendor handle it. Run through the command line
in a process of its own, as a user's installed plug-in is found (the kinds are read once a process)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

from tests.conftest import ROOT
from tests.helpers import http_server, serving_bytes

STACK = """\
schema: 1
name: demo
toolkit:
  vendor: cpusim
  version: 8.3.RC1
  chip: 910b
  packages:
    toolkit:
      x86_64:
        file: tk.run
        generate: "printf 'toolkit-v1' > {output_dir}/tk.run"
host: {driver: none}
platform: {os: debian, os_version: "12", python: "3.11", architectures: [x86_64]}
base:
  image: debian@sha256:1111111111111111111111111111111111111111111111111111111111111111
components:
  - id: web
    source: {http: "URL/web.tar"}
    build: ["tar -xf source.tar"]
smoke: {command: "true", expect: ""}
"""


def _distribution(site: Path) -> None:
    """The metadata an installed distribution with the toy kind would have (what pip writes)."""
    info = site / "stackbuild_toy-1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: stackbuild-toy\nVersion: 1\n")
    (info / "entry_points.txt").write_text("[stackbuild.sources]\nhttp = tests.plugins.stackbuild_http_source:KIND\n")


def _tarball() -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        data = b"print('web')\n"
        member = tarfile.TarInfo("main.py")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
    return raw.getvalue()


def _stackbuild(tmp_path: Path, *args: str, plugin: bool = True) -> subprocess.CompletedProcess[str]:
    paths = [str(tmp_path / "site")] if plugin else []
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([*paths, str(ROOT)]),
        "STACKBUILD_CACHE": str(tmp_path / "cache"),
        "STACKBUILD_SITE_CONFIG": str(tmp_path / "empty-site.yaml"),
    }
    command = [sys.executable, "-m", "builder", "--root", str(tmp_path / "project"), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


def test_a_source_kind_added_as_one_plugin_module_is_accepted_locked_rendered_and_vendored(tmp_path: Path) -> None:
    _distribution(tmp_path / "site")
    (tmp_path / "empty-site.yaml").write_text("{}\n")
    (tmp_path / "project" / "stacks").mkdir(parents=True)
    tarball = _tarball()
    sha = hashlib.sha256(tarball).hexdigest()
    with http_server(serving_bytes(lambda: tarball)) as url:
        (tmp_path / "project" / "stacks" / "demo.yaml").write_text(STACK.replace("URL", url))

        schema = _stackbuild(tmp_path, "schema")
        assert schema.returncode == 0, schema.stderr
        definitions = json.loads(schema.stdout)["$defs"]
        assert definitions["HttpSource"]["properties"]["http"]["description"].startswith("a tarball's URL")
        assert {"$ref": "#/$defs/HttpSource"} in definitions["Component"]["properties"]["source"]["oneOf"]

        unknown = _stackbuild(tmp_path, "validate", str(tmp_path / "project" / "stacks" / "demo.yaml"), plugin=False)
        assert unknown.returncode == 2 and "give exactly one of 'git' (with 'ref') or 'path'" in unknown.stderr
        valid = _stackbuild(tmp_path, "validate", str(tmp_path / "project" / "stacks" / "demo.yaml"))
        assert valid.returncode == 0, valid.stderr

        locked = _stackbuild(tmp_path, "lock", "demo")
        assert locked.returncode == 0, locked.stderr
        assert f"component web: http {url}/web.tar {sha}" in locked.stderr
        data = json.loads((tmp_path / "project" / "lockfiles" / "demo.lock.json").read_text())
        assert data["components"][0]["source"] == {"kind": "http", "url": f"{url}/web.tar", "sha256": sha}

        rendered = _stackbuild(tmp_path, "render", "demo", "-o", str(tmp_path / "rendered"))
        assert rendered.returncode == 0, rendered.stderr
        assert f"http {url}/web.tar {sha}" in (tmp_path / "rendered" / "web.Dockerfile").read_text()

        bundle = tmp_path / "bundle"
        vendored = _stackbuild(tmp_path, "vendor", "demo", "-o", str(bundle))
    assert vendored.returncode == 0, vendored.stderr
    files = json.loads((bundle / "bundle.json").read_text())["files"]
    assert files[f"blobs/{sha}"]["size"] == len(tarball)
    assert (bundle / "blobs" / sha).read_bytes() == tarball
