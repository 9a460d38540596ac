"""tests/wheelhouse.py makes wheels pip selects by platform, installs and imports."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.wheelhouse import make_wheel

ENV = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PIP_CONFIG_FILE=os.devnull)


@pytest.fixture
def wheelhouse(tmp_path: Path) -> Path:
    house = tmp_path / "wheels"
    for version, arch in (("1.0", "x86_64"), ("0.9", "aarch64")):
        make_wheel(
            house,
            "sbdemo",
            version,
            tag=f"py3-none-manylinux2014_{arch}",
            modules={"sbdemo/__init__.py": f"VERSION = {version!r}\n"},
            requires=["sbdep>=2.0"],
        )
    make_wheel(house, "sbdep", "2.0", modules={"sbdep/__init__.py": "ANSWER = 42\n"})
    return house


def pip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pip", *args], env=ENV, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("arch", "picked"), [("aarch64", "0.9"), ("x86_64", "1.0")])
def test_pip_download_picks_the_platforms_wheel(wheelhouse: Path, tmp_path: Path, arch: str, picked: str) -> None:
    dest = tmp_path / "dest"
    result = pip(
        "download",
        "--no-index",
        "--find-links",
        str(wheelhouse),
        "--only-binary=:all:",
        "--platform",
        f"manylinux2014_{arch}",
        "--python-version",
        "3.11",
        "--implementation",
        "cp",
        "--dest",
        str(dest),
        "sbdemo",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # Requires-Dist is honoured: the pure dependency comes along.
    assert sorted(p.name for p in dest.iterdir()) == [
        f"sbdemo-{picked}-py3-none-manylinux2014_{arch}.whl",
        "sbdep-2.0-py3-none-any.whl",
    ]


def test_pip_installs_the_pure_wheel_and_it_imports(wheelhouse: Path, tmp_path: Path) -> None:
    target = tmp_path / "target"
    result = pip("install", "--no-index", "--find-links", str(wheelhouse), "--target", str(target), "sbdep==2.0")
    assert result.returncode == 0, result.stdout + result.stderr
    check = subprocess.run(
        [sys.executable, "-c", "import sbdep; print(sbdep.ANSWER)"],
        env=dict(os.environ, PYTHONPATH=str(target)),
        capture_output=True,
        text=True,
    )
    assert check.stdout == "42\n", check.stderr
    assert (target / "sbdep-2.0.dist-info" / "METADATA").read_text().startswith("Metadata-Version: 2.1\n")


def test_record_is_right_and_wheels_are_reproducible(tmp_path: Path) -> None:
    def build(out_dir: Path) -> Path:
        return make_wheel(
            out_dir, "sb-demo", "1.0", modules={"sb_demo/__init__.py": "X = 1\n"}, requires=["sbdep>=2.0"]
        )

    first, second = build(tmp_path / "a"), build(tmp_path / "b")
    assert first.name == "sb_demo-1.0-py3-none-any.whl"
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as whl:
        assert whl.testzip() is None
        assert all(info.date_time == (1980, 1, 1, 0, 0, 0) for info in whl.infolist())
        rows = [line.split(",") for line in whl.read("sb_demo-1.0.dist-info/RECORD").decode().splitlines()]
        assert sorted(row[0] for row in rows) == sorted(whl.namelist())
        for member, digest, size in rows:
            if member.endswith("/RECORD"):
                assert (digest, size) == ("", "")
                continue
            data = whl.read(member)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert (digest, size) == (f"sha256={expected}", str(len(data)))
        assert "Root-Is-Purelib: true" in whl.read("sb_demo-1.0.dist-info/WHEEL").decode()
    platform = make_wheel(tmp_path, "sbdemo", "1.0", tag="py3-none-manylinux2014_aarch64")
    with zipfile.ZipFile(platform) as whl:
        assert "Root-Is-Purelib: false" in whl.read("sbdemo-1.0.dist-info/WHEEL").decode()
