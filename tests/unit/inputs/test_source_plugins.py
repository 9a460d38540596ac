"""A kind of source added as one module, registered as every plug-in is (an entry point of the group
`stackbuild.sources` in a distribution's metadata), touching no file under builder/: the manifest
accepts it, the schema shows it, and lock, render and vendor handle it. Run through the command line
in a process of its own, as a user's installed plug-in is found (the kinds are read once a process)."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

from tests.helpers import http_server, serving_bytes
from tests.plugins.installed import install, stackbuild

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


def _tarball() -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        data = b"print('web')\n"
        member = tarfile.TarInfo("main.py")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
    return raw.getvalue()


def test_a_source_kind_added_as_one_plugin_module_is_accepted_locked_rendered_and_vendored(tmp_path: Path) -> None:
    install(tmp_path / "site", "stackbuild.sources", "http", "tests.plugins.stackbuild_http_source:KIND")
    (tmp_path / "project" / "stacks").mkdir(parents=True)
    tarball = _tarball()
    sha = hashlib.sha256(tarball).hexdigest()
    with http_server(serving_bytes(lambda: tarball)) as url:
        (tmp_path / "project" / "stacks" / "demo.yaml").write_text(STACK.replace("URL", url))

        schema = stackbuild(tmp_path, "schema")
        assert schema.returncode == 0, schema.stderr
        definitions = json.loads(schema.stdout)["$defs"]
        assert definitions["HttpSource"]["properties"]["http"]["description"].startswith("a tarball's URL")
        assert {"$ref": "#/$defs/HttpSource"} in definitions["Component"]["properties"]["source"]["oneOf"]

        unknown = stackbuild(tmp_path, "validate", str(tmp_path / "project" / "stacks" / "demo.yaml"), plugin=False)
        assert unknown.returncode == 2 and "give exactly one of 'git' (with 'ref') or 'path'" in unknown.stderr
        valid = stackbuild(tmp_path, "validate", str(tmp_path / "project" / "stacks" / "demo.yaml"))
        assert valid.returncode == 0, valid.stderr

        locked = stackbuild(tmp_path, "lock", "demo")
        assert locked.returncode == 0, locked.stderr
        assert f"component web: http {url}/web.tar {sha}" in locked.stderr
        data = json.loads((tmp_path / "project" / "lockfiles" / "demo.lock.json").read_text())
        assert data["components"][0]["source"] == {"kind": "http", "url": f"{url}/web.tar", "sha256": sha}

        rendered = stackbuild(tmp_path, "render", "demo", "-o", str(tmp_path / "rendered"))
        assert rendered.returncode == 0, rendered.stderr
        assert f"http {url}/web.tar {sha}" in (tmp_path / "rendered" / "web.Dockerfile").read_text()

        bundle = tmp_path / "bundle"
        vendored = stackbuild(tmp_path, "vendor", "demo", "-o", str(bundle))
    assert vendored.returncode == 0, vendored.stderr
    files = json.loads((bundle / "bundle.json").read_text())["files"]
    assert files[f"blobs/{sha}"]["size"] == len(tarball)
    assert (bundle / "blobs" / sha).read_bytes() == tarball
