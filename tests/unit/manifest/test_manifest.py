import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from builder import manifest
from builder.manifest.graph import topological_order
from tests.conftest import ROOT
from tests.helpers import run_cli

BROKEN = sorted((ROOT / "tests" / "manifests" / "broken").glob("*.yaml"))
SHIPPED = sorted((ROOT / "stacks").glob("*.yaml"))


def test_shipped_stacks_validate(capsys: pytest.CaptureFixture[str]) -> None:
    assert {p.name for p in SHIPPED} >= {"reference.yaml", "6.3.RC1.yaml", "8.5.0.yaml"}
    code, out, err = run_cli(capsys, "validate", *map(str, SHIPPED))
    assert code == 0, err
    assert out.count("ok: ") == len(SHIPPED)


def test_at_least_fifteen_distinct_mistakes() -> None:
    expectations = {p.read_text().splitlines()[0] for p in BROKEN}
    assert len(expectations) == len(BROKEN) >= 15


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_broken_manifest_gives_one_located_line(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect = path.read_text().splitlines()[0].removeprefix("# expect: ")
    code, out, err = run_cli(capsys, "validate", str(path))
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert re.match(rf"^{re.escape(str(path))}:\d+:\d+: ", lines[0]), lines[0]
    assert expect in lines[0]


def test_locations_point_at_the_node(capsys: pytest.CaptureFixture[str]) -> None:
    broken = ROOT / "tests" / "manifests" / "broken"
    _, _, err = run_cli(capsys, "validate", str(broken / "05-unknown-depends.yaml"))
    assert ":29:18: components[1].depends_on[0]: " in err
    _, _, err = run_cli(capsys, "validate", str(broken / "02-unknown-component-key.yaml"))
    assert ":26:5: components[0].biuld: " in err


def test_no_traceback_from_the_command_line() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "builder", "validate", str(BROKEN[0]), "missing.yaml"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert "missing.yaml: cannot read: No such file or directory" in run.stderr


def test_schema_is_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "schema")
    schema = json.loads(out)
    assert code == 0
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert {"schema", "toolkit", "host", "platform", "base", "components", "smoke"} <= set(schema["properties"])
    assert schema["additionalProperties"] is False


def test_components_ordered_by_graph_not_file_order(tmp_path: Path) -> None:
    text = (ROOT / "tests" / "manifests" / "valid.yaml").read_text()
    text = text.replace("  - id: first\n    source: {path: .}\n    build: [make]\n", "")
    text += "  # appended\n"
    text = text.replace("smoke:", "").replace('  command: "true"\n  expect: ""\n', "")
    text += "  - id: first\n    source: {path: .}\nsmoke:\n  command: 'true'\n  expect: ''\n"
    path = tmp_path / "m.yaml"
    path.write_text(text)
    loaded = manifest.load(path)
    assert [c.id for c in loaded.components] == ["second", "first"]
    assert topological_order({c.id: c.depends_on for c in loaded.components}) == ["first", "second"]


def test_credentials_in_urls_are_refused_without_echoing_them(capsys: pytest.CaptureFixture[str]) -> None:
    path = ROOT / "tests" / "manifests" / "broken" / "25-credentials-in-url.yaml"
    assert "ghp_s3cr3t" in path.read_text()
    code, out, err = run_cli(capsys, "validate", str(path))
    assert code == 2
    assert "ghp_s3cr3t" not in out + err
