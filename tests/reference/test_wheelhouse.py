"""The reference wheelhouse's wheel is what make_wheel.py writes from src/, byte for byte."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import REFERENCE
from tests.wheelhouse import reference_wheels


def test_the_committed_wheel_is_rebuilt_from_its_sources(tmp_path: Path) -> None:
    (rebuilt,) = reference_wheels(tmp_path)
    assert rebuilt.read_bytes() == (REFERENCE / "wheelhouse" / rebuilt.name).read_bytes()
