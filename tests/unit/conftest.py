"""The unit tests' shared demo project: a git repository with stacks/demo.yaml (tests/manifests/
valid.yaml with a path source and a generated package), which the tests of the manifest, inputs, lock
and CLI packages edit as a careless user or an attacker would."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers import make_repo, run_cli

VALID = (ROOT / "tests" / "manifests" / "valid.yaml").read_text()
GENERATED = '      x86_64:\n        file: tk_x86_64.run\n        generate: "printf tk > {output_dir}/tk_x86_64.run"\n'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project root (a git repository) with stacks/demo.yaml (a path source, a generated package), locked."""
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))
    (tmp_path / "site.yaml").write_text("{}\n")
    monkeypatch.setenv("STACKBUILD_SITE_CONFIG", str(tmp_path / "site.yaml"))
    root = tmp_path / "project"
    make_repo(root)
    (root / "stacks" / "app").mkdir(parents=True)
    (root / "stacks" / "app" / "Makefile").write_text("all:\n\ttrue\n")
    text = VALID.replace("source: {path: .}", "source: {path: app}").replace("name: mini", "name: demo")
    text = text[: text.index("      x86_64:")] + GENERATED + text[text.index("host:") :]
    (root / "stacks" / "demo.yaml").write_text(text)
    return root


def cli(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, str, str]:
    return run_cli(capsys, "--root", str(root), *args)
