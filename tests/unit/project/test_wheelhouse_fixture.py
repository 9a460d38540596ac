"""tests/wheelhouse.py makes valid, reproducible wheels (pip selecting them per platform: test_system_packages)."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

from tests.wheelhouse import make_wheel


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
