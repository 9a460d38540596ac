"""YAML that is not a manifest or a site configuration (not UTF-8, too deep, an alias bomb, a list, a
scalar, a cycle) gives one line and exit 2, never a traceback or a hang."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run_cli

BAD_YAML = {
    "non-utf8": b"schema: 1\nname: \xff\xfe\n",
    "deep": b"[" * 5000 + b"]" * 5000,
    "alias-bomb": b"a: &a [x,x,x,x,x,x,x,x,x]\n"
    + b"".join(f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n".encode() for i in range(8)),
    "list": b"- just\n- a list\n",
    "scalar": b"42\n",
    "cyclic": b"&a [*a]\n",
}


@pytest.mark.parametrize("name", sorted(BAD_YAML))
def test_bad_yaml_manifests_and_site_configs_give_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_bytes(BAD_YAML[name])
    code, _, err = run_cli(capsys, "validate", str(path))
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith(str(path)), err
    code, _, err = run_cli(capsys, "--site-config", str(path), "render", "reference")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
