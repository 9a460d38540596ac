"""A kind of base added as one module, registered as every plug-in is (an entry point of the group
`stackbuild.bases` in a distribution's metadata), touching no file under builder/: the manifest
accepts it, the schema shows it, and lock, lock --check, render, plan and vendor handle it. Run
through the command line in a process of its own, as a user's installed plug-in is found."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import get_args

from builder.inputs import base_kinds
from builder.lock.locked import LockedBase
from builder.manifest.model import Base
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
  rootfs: "URL/rootfs-{arch}-{flavor}.tar"
components: []
smoke: {command: "true", expect: ""}
"""


def test_the_base_unions_are_made_of_the_registered_kinds_in_their_order() -> None:
    kinds = base_kinds.kinds()
    assert list(kinds) == ["image", "bootstrap"]  # stackbuild's own, in the order the schema lists them
    members = get_args(get_args(Base)[0])
    assert [get_args(member)[0] for member in members] == [kind.spec for kind in kinds.values()]
    assert get_args(get_args(LockedBase)[0]) == tuple(kind.locked for kind in kinds.values())


def _rootfs() -> bytes:
    """A root filesystem's tarball whose dpkg status names one installed package."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        data = b"Package: base-files\nStatus: install ok installed\nVersion: 12.4\n\n"
        member = tarfile.TarInfo("var/lib/dpkg/status")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
    return raw.getvalue()


def test_a_base_kind_added_as_one_plugin_module_is_accepted_locked_rendered_planned_and_vendored(
    tmp_path: Path,
) -> None:
    install(tmp_path / "site", "stackbuild.bases", "rootfs", "tests.plugins.stackbuild_rootfs_base:KIND")
    (tmp_path / "project" / "stacks").mkdir(parents=True)
    rootfs = _rootfs()
    sha = hashlib.sha256(rootfs).hexdigest()
    manifest = tmp_path / "project" / "stacks" / "demo.yaml"
    with http_server(serving_bytes(lambda: rootfs)) as url:
        manifest.write_text(STACK.replace("URL", url))

        schema = stackbuild(tmp_path, "schema")
        assert schema.returncode == 0, schema.stderr
        definitions = json.loads(schema.stdout)["$defs"]
        assert definitions["RootfsBase"]["properties"]["rootfs"]["description"].startswith("a root filesystem")
        assert {"$ref": "#/$defs/RootfsBase"} in json.loads(schema.stdout)["properties"]["base"]["oneOf"]

        unknown = stackbuild(tmp_path, "validate", str(manifest), plugin=False)
        assert (
            unknown.returncode == 2
            and "give exactly one of 'image' (pinned by digest) or 'bootstrap'" in unknown.stderr
        )
        valid = stackbuild(tmp_path, "validate", str(manifest))
        assert valid.returncode == 0, valid.stderr

        locked = stackbuild(tmp_path, "lock", "demo")
        assert locked.returncode == 0, locked.stderr
        assert f"base x86_64 devel: download {url}/rootfs-{{arch}}-{{flavor}}.tar" in locked.stderr
        data = json.loads((tmp_path / "project" / "lockfiles" / "demo.lock.json").read_text())
        assert data["base"] == {
            "kind": "rootfs",
            "url": f"{url}/rootfs-{{arch}}-{{flavor}}.tar",
            "source_date_epoch": 1704067200,
        }
        tarballs = data["architectures"]["x86_64"]["base"]
        assert {flavor: t["sha256"] for flavor, t in tarballs.items()} == {"devel": sha, "runtime": sha}
        assert tarballs["devel"]["packages"] == {"base-files": "12.4"}

        checked = stackbuild(tmp_path, "lock", "demo", "--check")
        assert checked.returncode == 0, checked.stdout + checked.stderr

    # The tarballs are in the cache now: render, plan and vendor need no host.
    rendered = stackbuild(tmp_path, "render", "demo", "-o", str(tmp_path / "rendered"))
    assert rendered.returncode == 0, rendered.stderr
    dockerfile = (tmp_path / "rendered" / "base-devel.Dockerfile").read_text()
    assert dockerfile.startswith(f"# stackbuild: base (devel), a root filesystem downloaded from {url}/rootfs-")
    assert "FROM scratch\nADD rootfs.tar /\n" in dockerfile

    planned = stackbuild(tmp_path, "plan", "demo", "--json")
    assert planned.returncode == 0, planned.stderr
    stages = [s["stage"] for s in json.loads(planned.stdout)["stages"]]
    assert stages[:3] == ["base-devel", "base-runtime", "toolkit"]

    bundle = tmp_path / "bundle"
    vendored = stackbuild(tmp_path, "vendor", "demo", "-o", str(bundle))
    assert vendored.returncode == 0, vendored.stderr
    files = json.loads((bundle / "bundle.json").read_text())["files"]
    assert (bundle / "blobs" / sha).read_bytes() == rootfs and files[f"blobs/{sha}"]["size"] == len(rootfs)
