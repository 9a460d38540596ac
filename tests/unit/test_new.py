import importlib.util
import json
from pathlib import Path

import pytest
import yaml

from builder import manifest
from tests.helpers import run_cli


def catalog_entries(version: str) -> dict[str, dict[str, str]]:
    """The ascend-deployer catalog file, read directly (not through builder.catalog)."""
    spec = importlib.util.find_spec("ascend_deployer")
    assert spec and spec.submodule_search_locations
    path = Path(next(iter(spec.submodule_search_locations))) / "downloader" / "software" / f"CANN_{version}.json"
    return {o["filename"]: o for o in json.loads(path.read_text())["other"]}


def test_new_8_3_rc1_matches_catalog_byte_for_byte(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "new.yaml"
    code, _, err = run_cli(capsys, "new", "8.3.RC1", "--chip", "910b", "-o", str(out))
    assert code == 0, err
    data = yaml.safe_load(out.read_text())
    entries = catalog_entries("8.3.RC1")
    written = [pkg for kind in data["toolkit"]["packages"].values() for pkg in kind.values()]
    assert {p["file"] for p in written} == {
        "Ascend-cann-toolkit_8.3.RC1_linux-x86_64.zip",
        "Ascend-cann-toolkit_8.3.RC1_linux-aarch64.zip",
        "Ascend-cann-kernels-910b_8.3.RC1_linux-x86_64.zip",
        "Ascend-cann-kernels-910b_8.3.RC1_linux-aarch64.zip",
    }
    for pkg in written:
        assert pkg["url"] == entries[pkg["file"]]["url"]
        assert pkg["sha256"] == entries[pkg["file"]]["sha256"]
    assert data["host"]["driver"] == "25.3.RC1"
    loaded = manifest.load(out)
    assert loaded.toolkit.version == "8.3.RC1" and loaded.toolkit.vendor == "huawei"


def test_new_rejects_unknown_release_and_chip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "new", "7.0.0", "--chip", "910b", "-o", str(tmp_path / "a.yaml"))
    assert code == 1 and "CANN 7.0.0 has no package list in the catalog" in err
    code, _, err = run_cli(capsys, "new", "8.1.RC1", "--chip", "a3", "-o", str(tmp_path / "b.yaml"))
    assert code == 1 and "no packages for chip a3" in err
    assert not (tmp_path / "a.yaml").exists() and not (tmp_path / "b.yaml").exists()
