"""Wheels for tests: the reference wheelhouse's writer (stacks/reference/wheelhouse/make_wheel.py)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

from tests.conftest import REFERENCE

_spec = importlib.util.spec_from_file_location("reference_make_wheel", REFERENCE / "wheelhouse" / "make_wheel.py")
assert _spec is not None and _spec.loader is not None
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
make_wheel: Callable[..., Path] = _module.make_wheel
normalise: Callable[[str], str] = _module.normalise
reference_wheels: Callable[..., list[Path]] = _module.reference_wheels
