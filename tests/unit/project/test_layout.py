"""The unit tests mirror the package: every module under tests/unit/ is in tests/unit/<package>/, where
<package> is the subpackage of builder/ whose behaviour it specifies, or in tests/unit/project/ when it
is about the project as a whole (the package's shape, its call sites, the docs, the workflows, the
shipped stacks, the test fixtures themselves). Only the package's own __init__.py and conftest.py sit
in tests/unit/ itself."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ROOT

UNIT = ROOT / "tests" / "unit"
PACKAGES = frozenset(p.name for p in (ROOT / "builder").iterdir() if (p / "__init__.py").is_file())
DIRECTORIES = PACKAGES | {"project"}
AT_THE_TOP = frozenset({"__init__.py", "conftest.py"})


def misplaced(unit: Path, directories: frozenset[str]) -> list[str]:
    """The modules under unit that are not where the layout puts them, and the directories that are no
    package (whose modules pytest and mypy would name by their path alone)."""
    found = []
    for path in sorted(unit.rglob("*.py")):
        where = path.relative_to(unit)
        if len(where.parts) == 1:
            if where.name not in AT_THE_TOP:
                found.append(f"{where}: in tests/unit/ itself, not in the directory of the package it specifies")
        elif len(where.parts) > 2 or where.parts[0] not in directories:
            found.append(f"{where}: not in a directory named after a package of builder/ or project/")
    for directory in sorted(d for d in unit.iterdir() if d.is_dir() and d.name != "__pycache__"):
        if not (directory / "__init__.py").is_file():
            found.append(f"{directory.relative_to(unit)}/: has no __init__.py")
    return found


def test_every_unit_test_module_is_in_the_directory_of_the_package_it_specifies() -> None:
    assert {"model", "store", "engine", "manifest", "inputs", "lock", "plan", "execute", "cli"} <= PACKAGES  # found
    assert misplaced(UNIT, DIRECTORIES) == []


def test_the_layout_check_finds_a_module_out_of_place(tmp_path: Path) -> None:
    for module in ["__init__.py", "conftest.py", "lock/__init__.py", "lock/test_ok.py", "test_by_issue.py"]:
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text("")
    for module in ["hardening/test_x.py", "lock/deeper/test_y.py", "plan/test_z.py"]:
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text("")
    (tmp_path / "hardening" / "__init__.py").write_text("")
    assert misplaced(tmp_path, frozenset({"lock", "plan", "project"})) == [
        "hardening/__init__.py: not in a directory named after a package of builder/ or project/",
        "hardening/test_x.py: not in a directory named after a package of builder/ or project/",
        "lock/deeper/test_y.py: not in a directory named after a package of builder/ or project/",
        "test_by_issue.py: in tests/unit/ itself, not in the directory of the package it specifies",
        "plan/: has no __init__.py",
    ]
