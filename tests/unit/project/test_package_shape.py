"""The package's shape, as issue 52 set it: every module under builder/ at most MAX_LINES lines, every
class at most MAX_METHODS methods (split along real seams instead), and one name one meaning: no two
modules share a file name and no two classes a name (imports and error messages stay unambiguous)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from tests.conftest import ROOT

MAX_LINES = 400
MAX_METHODS = 12
PACKAGE = ROOT / "builder"
# Copied into images as they are (their bytes are part of stage keys), not modules of the package.
TEMPLATES = PACKAGE / "plan" / "templates"


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if TEMPLATES not in p.parents)


def _classes() -> list[tuple[Path, ast.ClassDef]]:
    return [
        (path, node)
        for path in _modules()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
    ]


def test_no_module_is_over_the_line_limit() -> None:
    over = {str(p.relative_to(ROOT)): n for p in _modules() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert over == {}, f"split these along their seams (at most {MAX_LINES} lines): {over}"


def test_no_class_has_more_than_the_method_limit() -> None:
    over = {
        f"{p.relative_to(ROOT)}:{c.name}": n
        for p, c in _classes()
        if (n := sum(isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) for b in c.body)) > MAX_METHODS
    }
    assert over == {}, f"split these classes (at most {MAX_METHODS} methods): {over}"


def test_no_two_modules_and_no_two_classes_share_a_name() -> None:
    modules: dict[str, list[str]] = defaultdict(list)
    for path in _modules():
        if path.name != "__init__.py":
            modules[path.name].append(str(path.relative_to(ROOT)))
    classes: dict[str, list[str]] = defaultdict(list)
    for path, node in _classes():
        classes[node.name].append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert {n: ps for n, ps in modules.items() if len(ps) > 1} == {}
    assert {n: ps for n, ps in classes.items() if len(ps) > 1} == {}
