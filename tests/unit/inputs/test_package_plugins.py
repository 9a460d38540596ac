"""The kinds of toolkit package and the forms a package file is shipped in are registries
(builder.model.plugins): the manifest's and the lock's package unions, and so the schema, are made
of the kinds found, and a kind added as one plug-in module (an entry point of the group
`stackbuild.packages`), touching no file under builder/, is accepted, locked, checked, rendered
and vendored. The plug-in runs through the command line in a process of its own, as a user's
installed plug-in is found (the kinds are read once a process)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import get_args

from builder.inputs import package_forms, package_kinds, signed
from builder.lock.locked import LockedPackage
from builder.manifest.toolkit import Package
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
      x86_64: {file: tk.run, local: installers/tk.run}
host: {driver: none}
platform: {os: debian, os_version: "12", python: "3.11", architectures: [x86_64]}
base:
  image: debian@sha256:1111111111111111111111111111111111111111111111111111111111111111
components:
  - id: app
    source: {path: app}
    build: ["true"]
smoke: {command: "true", expect: ""}
"""


def test_the_package_unions_are_made_of_the_registered_kinds_in_their_order() -> None:
    kinds = package_kinds.kinds()
    assert list(kinds) == ["download", "generate"]  # stackbuild's own, in the order the schema lists them
    members = get_args(get_args(Package)[0])
    assert [get_args(member)[0] for member in members] == [kind.spec for kind in kinds.values()]
    assert get_args(get_args(LockedPackage)[0]) == tuple(kind.locked for kind in kinds.values())


def test_a_package_files_form_is_told_by_its_suffix_and_a_file_no_form_claims_is_run_as_it_is() -> None:
    assert package_forms.forms() == {"zip": signed.FORM, "run": package_forms.BARE}
    assert package_forms.form_of("Ascend-cann-toolkit_8.5.0_linux-x86_64.zip") is signed.FORM
    assert package_forms.installer_name("Ascend-cann-toolkit_8.5.0_linux-x86_64.zip").endswith("x86_64.run")
    for bare in ("Ascend-cann-toolkit_8.3.RC1_linux-x86_64.run", "tk.bin", "archive.zip.run"):
        assert package_forms.form_of(bare) is package_forms.BARE
        assert package_forms.installer_name(bare) == bare


def test_a_package_kind_added_as_one_plugin_module_is_accepted_locked_checked_rendered_and_vendored(
    tmp_path: Path,
) -> None:
    install(tmp_path / "site", "stackbuild.packages", "local", "tests.plugins.stackbuild_local_package:KIND")
    stacks = tmp_path / "project" / "stacks"
    (stacks / "app").mkdir(parents=True)
    (stacks / "installers").mkdir()
    installer = b"#!/bin/sh\necho toy toolkit\n"
    (stacks / "installers" / "tk.run").write_bytes(installer)
    sha = hashlib.sha256(installer).hexdigest()
    (stacks / "demo.yaml").write_text(STACK)

    schema = stackbuild(tmp_path, "schema")
    assert schema.returncode == 0, schema.stderr
    definitions = json.loads(schema.stdout)["$defs"]
    assert definitions["LocalPackage"]["properties"]["local"]["description"].startswith("the installer")
    members = definitions["Packages"]["properties"]["toolkit"]["additionalProperties"]["oneOf"]
    assert members[-1] == {"$ref": "#/$defs/LocalPackage"} and len(members) == 3

    unknown = stackbuild(tmp_path, "validate", str(stacks / "demo.yaml"), plugin=False)
    assert unknown.returncode == 2
    assert "give exactly one of 'url' (download) or 'generate' (a local command)" in unknown.stderr
    valid = stackbuild(tmp_path, "validate", str(stacks / "demo.yaml"))
    assert valid.returncode == 0 and "warning" not in valid.stdout, valid.stdout + valid.stderr

    locked = stackbuild(tmp_path, "lock", "demo")
    assert locked.returncode == 0, locked.stderr
    data = json.loads((tmp_path / "project" / "lockfiles" / "demo.lock.json").read_text())
    assert data["architectures"]["x86_64"]["packages"] == [
        {
            "kind": "local",
            "role": "toolkit",
            "file": "tk.run",
            "path": "installers/tk.run",
            "sha256": sha,
            "size": len(installer),
        }
    ]
    assert stackbuild(tmp_path, "lock", "demo", "--check").returncode == 0

    rendered = stackbuild(tmp_path, "render", "demo", "-o", str(tmp_path / "rendered"))
    assert rendered.returncode == 0, rendered.stderr
    assert "bash /mnt/tk.run --install" in (tmp_path / "rendered" / "toolkit.Dockerfile").read_text()

    shutil.rmtree(tmp_path / "cache")  # so the vendoring takes the installer from beside the manifest again
    bundle = tmp_path / "bundle"
    vendored = stackbuild(tmp_path, "vendor", "demo", "-o", str(bundle))
    assert vendored.returncode == 0, vendored.stderr
    assert (bundle / "blobs" / sha).read_bytes() == installer

    (stacks / "installers" / "tk.run").write_bytes(b"#!/bin/sh\necho another toolkit\n")
    drifted = stackbuild(tmp_path, "lock", "demo", "--check")
    assert (
        drifted.returncode != 0
        and "package tk.run: installers/tk.run now has sha256" in drifted.stdout + drifted.stderr
    )
