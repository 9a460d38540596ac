"""Installer packages checked before anything slow: where `lock` found each one (an installer
directory, the cache, or a download to come), and a file that is not the archive its name says
refused in one line, by `lock` and by a build before git, .debs, wheels or bases."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest

from builder.inputs import packages
from builder.inputs.download_package import LockedDownload
from builder.inputs.site import SiteConfig
from builder.manifest import catalog
from builder.model.errors import InputError, StackbuildError
from builder.plan import prepare
from builder.store.cache import Cache
from tests.golden_plan import golden_request
from tests.helpers import run_cli
from tests.unit.lock.test_lock import MANIFEST


def zipped(member: str, data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(member, data)
    return out.getvalue()


def project(tmp_path: Path, payload: bytes | None, file: str = "tk.zip") -> tuple[Path, Path, str]:
    """(root, site config, the package's sha256): stacks/demo.yaml pinning `file`, which the site's one
    installer directory holds (payload None: it holds nothing, the package is to be downloaded)."""
    local = tmp_path / "installers"
    local.mkdir(parents=True)
    pinned = payload if payload is not None else b"elsewhere"
    if payload is not None:
        (local / file).write_bytes(payload)
    sha = hashlib.sha256(pinned).hexdigest()
    root = tmp_path / "project"
    (root / "stacks" / "app").mkdir(parents=True)
    text = MANIFEST.replace(
        "        file: tk.run\n        generate: \"printf 'toolkit-v1' > {output_dir}/tk.run\"",
        f'        file: {file}\n        url: http://127.0.0.1:9/unreachable/{file}\n        sha256: "{sha}"',
    )
    text = text[: text.index("components:")] + "components:\n  - id: app\n    source: {path: app}\n"
    (root / "stacks" / "demo.yaml").write_text(text + 'smoke: {command: "true", expect: ""}\n')
    site = tmp_path / "site.yaml"
    site.write_text(f"installer_dirs: [{local}]\n")
    return root, site, sha


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))


def test_lock_says_where_it_found_each_package_or_that_it_will_be_downloaded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, site, _ = project(tmp_path / "found", b"#!/bin/sh\n", file="tk.run")
    code, _, err = run_cli(capsys, "--root", str(root), "--site-config", str(site), "lock", "demo")
    assert code == 0, err
    assert f"  tk.run: found in {tmp_path / 'found' / 'installers'} (installer_dirs)" in err.splitlines()
    code, _, err = run_cli(capsys, "--root", str(root), "--site-config", str(site), "lock", "demo")
    assert code == 0 and "  tk.run: found in" in err, err  # found where it is each time, not only in the cache
    root, site, _ = project(tmp_path / "away", None, file="tk.run")
    code, _, err = run_cli(capsys, "--root", str(root), "--site-config", str(site), "lock", "demo")
    assert code == 0, err
    assert (
        "  tk.run: in no installer_dirs directory: downloaded when a build needs it, checked against its pin"
        in err.splitlines()
    )


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        (b"<html>404 Not Found</html>", f"is not a zip archive: {packages.FIX_PIN}"),
        (
            zipped("other.run", b"#!/bin/sh\n"),
            f"holds no .cms signature (it holds other.run), not a signed catalog zip: {packages.FIX_PIN}",
        ),
    ],
    ids=["not-a-zip", "without-its-installer"],
)
def test_a_package_that_is_not_what_its_name_says_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], payload: bytes, says: str
) -> None:
    root, site, _ = project(tmp_path, payload)
    code, _, err = run_cli(capsys, "--root", str(root), "--site-config", str(site), "lock", "demo")
    assert code == 2
    errors = [line for line in err.splitlines() if line.startswith("stackbuild:")]
    assert errors == [f"stackbuild: error: tk.zip: {tmp_path / 'installers' / 'tk.zip'} {says}"], err
    assert not (root / "lockfiles" / "demo.lock.json").exists()


def test_a_build_refuses_a_wrong_archive_before_git_debs_wheels_or_bases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    request = golden_request()
    toolkit = next(p for p in request.lock.section(request.arch).packages if p.role == "toolkit")
    assert isinstance(toolkit, LockedDownload) and toolkit.file.endswith(".zip")
    cache = Cache(tmp_path / "cache")
    cache.blob(toolkit.sha256).parent.mkdir(parents=True)
    cache.blob(toolkit.sha256).write_bytes(b"not a zip")  # what a wrong copy put there under that name

    def slow(*args: object, **kwargs: object) -> None:
        raise AssertionError("reached the slow work before the package was checked")

    monkeypatch.setattr(prepare, "_sources", slow)
    with pytest.raises(InputError, match=rf"^{toolkit.file}: .* is not a zip archive"):
        prepare.prepare_inputs(request.__class__(**{**vars(request), "cache": cache}), print)


def test_a_local_copy_that_is_not_the_pinned_file_is_told_which_side_is_wrong(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The catalog decides: with the catalog's pin the file is wrong (fixing the pin would then need
    --allow-unsupported, a compatibility flag, for an integrity fault); with the catalog's file the pin is;
    with neither known, either may be."""
    release = catalog.release("8.5.0")
    entry = release.package("toolkit", "x86_64", "910b") if release else None
    assert entry is not None
    shelf = tmp_path / "cann"
    shelf.mkdir()
    site = SiteConfig(installer_dirs=[shelf])
    (shelf / entry.filename).write_bytes(b"a truncated download")
    with pytest.raises(StackbuildError, match="the pin is the catalog's, so the file is not the one the vendor"):
        packages.find_installer(site, entry.filename, entry.sha256)
    (shelf / "mine.zip").write_bytes(b"mine")
    with pytest.raises(StackbuildError, match=r": replace the file or fix the pin$"):
        packages.find_installer(site, "mine.zip", "0" * 64)
    mine = hashlib.sha256(b"mine").hexdigest()  # as if the catalog listed this file: the pin is what is wrong
    monkeypatch.setattr(catalog, "published", lambda file: catalog.CatalogFile(file, "https://x/mine.zip", mine))
    with pytest.raises(StackbuildError, match=f"the file is the one the catalog lists: pin its sha256 {mine} in"):
        packages.find_installer(site, "mine.zip", "0" * 64)


def test_installer_dirs_are_used_before_any_download(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A package found (by name and sha256) in the site's installer_dirs: no network at all."""
    root, site, sha = project(tmp_path, b"offline toolkit", file="tk.run")
    code, _, err = run_cli(capsys, "--root", str(root), "--site-config", str(site), "lock", "demo")
    assert code == 0, err
    assert (tmp_path / "cache" / "blobs" / "sha256" / sha).read_bytes() == b"offline toolkit"
    package = json.loads((root / "lockfiles" / "demo.lock.json").read_text())["architectures"]["x86_64"]["packages"][0]
    assert package["sha256"] == sha and package["size"] == len(b"offline toolkit")
