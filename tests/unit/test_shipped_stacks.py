"""Every shipped stack is what the README says it is: each one with a committed lock renders for each
of its architectures, hadolint-clean, from that lock alone (offline, an empty cache), and the README's
table of shipped stacks has one row per manifest under stacks/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from builder import manifest
from tests.conftest import ROOT
from tests.helpers import hadolint, run_cli

LOCKED = sorted(p.name.removesuffix(".lock.json") for p in (ROOT / "lockfiles").glob("*.lock.json"))


@pytest.mark.parametrize("stack", LOCKED)
def test_each_locked_shipped_stack_renders_hadolint_clean_for_each_architecture(
    stack: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))
    arches = manifest.load(ROOT / "stacks" / f"{stack}.yaml").platform.architectures
    for arch in arches:
        out = tmp_path / arch
        code, _, err = run_cli(capsys, "--root", str(ROOT), "render", stack, "--arch", str(arch), "-o", str(out))
        assert code == 0, err
    files = sorted(tmp_path.glob("*/*.Dockerfile"))
    assert {f.parent.name for f in files} == {str(a) for a in arches}
    lint = hadolint(files)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_the_readme_lists_every_shipped_stack_once() -> None:
    """The README's table of shipped stacks: a row (`| \\`NAME\\` | ...`) for each stacks/*.yaml, no other."""
    readme = (ROOT / "README.md").read_text()
    rows = re.findall(r"(?m)^\| `([^`]+)` \|", readme)
    assert sorted(rows) == sorted(p.stem for p in (ROOT / "stacks").glob("*.yaml"))
