"""Strings from a manifest cannot become Dockerfile instructions or a program's options: each one is
refused at validation in one line naming its field (exit 2), and nothing of it is echoed at length."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run_cli
from tests.unit.conftest import VALID, cli


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("    build: [make]", '    build: [make]\n    env: {A: "x\\nRUN evil"}', "components[0].env.A"),
        ("    build: [make]", '    build: [make]\n    env: {"A\\n": x}', "components[0].env"),
        (
            "    build: [make]",
            '    build: [make]\n    artifacts: [{path: "x\\nRUN evil"}]',
            "components[0].artifacts[0].path",
        ),
        (
            "  - id: first\n    source: {path: app}",
            '  - id: first\n    source: {git: "https://h/r.git", ref: "main\\nRUN evil"}',
            "components[0].source.ref",
        ),
        (
            "  - id: first\n    source: {path: app}",
            "  - id: first\n    source: {git: '--upload-pack=touch /tmp/x', ref: main}",
            "components[0].source.git",
        ),
        (
            "  - id: first\n    source: {path: app}",
            "  - id: first\n    source: {git: 'http://TOKEN@h/r.git', ref: main}",
            "components[0].source.git",
        ),
        ('  expect: ""', '  expect: "(unclosed"', "smoke.expect"),
    ],
    ids=["env-value", "env-name", "artifact", "git-ref", "git-option", "token-userinfo", "regex"],
)
def test_manifest_strings_are_refused_before_they_reach_a_dockerfile(
    project: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, field: str
) -> None:
    manifest = project / "stacks" / "demo.yaml"
    text = manifest.read_text()
    assert old in text
    manifest.write_text(text.replace(old, new, 1))
    code, out, err = cli(capsys, project, "validate", str(manifest))
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and f": {field}: " in err, err
    assert "TOKEN" not in err


@pytest.mark.parametrize(
    ("field", "value"),
    [("suite", "--setup-hook=touch /tmp/pwned"), ("mirror", "--setup-hook=touch /tmp/pwned"), ("packages", "[--hook]")],
)
def test_bootstrap_fields_cannot_be_options(
    project: Path, capsys: pytest.CaptureFixture[str], field: str, value: str
) -> None:
    manifest = project / "stacks" / "demo.yaml"
    text = manifest.read_text()
    start, end = text.index("base:"), text.index("components:")
    spec = {"suite": "bookworm", "mirror": "http://deb.debian.org/debian", "packages": "[make]"} | {field: value}
    base = f"base:\n  bootstrap:\n    suite: '{spec['suite']}'\n    mirror: '{spec['mirror']}'\n"
    base += f"    packages: {spec['packages']}\n"
    manifest.write_text(text[:start] + base + text[end:])
    code, _, err = cli(capsys, project, "validate", str(manifest))
    assert code == 2 and f"base.bootstrap.{field}" in err, err


def test_malformed_url_is_a_located_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = project / "stacks" / "demo.yaml"
    manifest.write_text(
        manifest.read_text().replace("source: {path: app}", "source: {git: 'http://[::1', ref: main}", 1)
    )
    code, _, err = cli(capsys, project, "validate", str(manifest))
    assert code == 2 and "components[0].source.git: not a valid URL" in err


def test_a_huge_invalid_name_is_not_echoed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(VALID.replace("name: mini", "name: '" + "x y" * 100_000 + "'"))
    code, _, err = run_cli(capsys, "validate", str(path))
    assert code == 2 and len(err) < 400, err[:500]


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        (
            "    build: [make]",
            "    build: [make]\n    artifacts: [{path: '${X:-.}${X:-.}/${X:-.}'}]",
            "components[0].artifacts[0].path",
        ),
        (
            "    build: [make]",
            "    build: [make]\n    installs: [{path: '/usr/local/$HOME'}]",
            "components[0].installs[0].path",
        ),
    ],
    ids=["artifact", "install"],
)
def test_docker_variables_in_copied_paths_are_refused(
    project: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, field: str
) -> None:
    manifest = project / "stacks" / "demo.yaml"
    manifest.write_text(manifest.read_text().replace(old, new, 1))
    code, _, err = cli(capsys, project, "validate", str(manifest))
    assert code == 2 and f": {field}: " in err and "'$' and '\\' are not allowed" in err, err
