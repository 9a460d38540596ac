"""A path the manifest copies (an artifact's, a space in it) is one COPY source in the rendered
Dockerfile, wherever it is copied."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.conftest import cli


def test_artifact_path_with_a_space_is_one_copy_source(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = project / "stacks" / "demo.yaml"
    text = manifest.read_text().replace(
        "    build: [make]", "    build: [make]\n    artifacts: [{path: 'x /', runtime: true}]", 1
    )
    manifest.write_text(text)
    assert cli(capsys, project, "lock", "demo")[0] == 0
    code, out, _ = cli(capsys, project, "render", "demo", "--arch", "x86_64")
    assert code == 0
    # Copied wherever it goes (its dependents, the devel and the runtime image), each time as one source.
    copies = [line for line in out.splitlines() if "/opt/stack/first/x /" in line]
    assert len(copies) >= 2
    for line in copies:
        assert (
            line
            == "COPY --from="
            + line.split("=", 1)[1].split(" ", 1)[0]
            + ' ["/opt/stack/first/x /", "/opt/stack/first/x /"]'
        )
