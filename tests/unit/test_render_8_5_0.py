"""The shipped 8.5.0 stack rendered for x86_64 against golden files (tests/golden/8.5.0-x86_64/): the
toolkit's packages never become a layer, the environment comes from the installed set_env.sh."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers import run_cli

GOLDEN = ROOT / "tests" / "golden" / "8.5.0-x86_64"
UPDATE = os.environ.get("STACKBUILD_UPDATE_GOLDEN") == "1"


def _rendered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))  # offline, from an empty cache
    out = tmp_path / "rendered"
    assert run_cli(capsys, "--root", str(ROOT), "render", "8.5.0", "--arch", "x86_64", "-o", str(out))[0] == 0
    return out


def _files(root: Path) -> dict[str, str]:
    """The rendered files but those copied as they are: the lock the finals carry (the committed lock)
    and the installs recorder (builder/plan/templates/installs.py)."""
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in ("stack.lock.json", "installs.py")
    }


def test_the_8_5_0_render_is_its_golden_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rendered = _files(_rendered(tmp_path, monkeypatch, capsys))
    if UPDATE:
        for rel, text in rendered.items():
            (GOLDEN / rel).parent.mkdir(parents=True, exist_ok=True)
            (GOLDEN / rel).write_text(text)
        pytest.skip("golden files rewritten: review `git diff tests/golden/8.5.0-x86_64`")
    assert rendered.keys() == _files(GOLDEN).keys()
    for rel, text in rendered.items():
        assert text == (GOLDEN / rel).read_text(), f"{rel}: rerun with STACKBUILD_UPDATE_GOLDEN=1 and review the diff"


def test_the_8_5_0_toolkit_installs_as_cann_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _rendered(tmp_path, monkeypatch, capsys)
    toolkit = (out / "toolkit.Dockerfile").read_text()
    # The packages are bind-mounted, never copied: no layer holds them.
    assert "COPY packages/" not in toolkit and 'COPY ["packages/' not in toolkit
    installs = [line for line in toolkit.splitlines() if " bash " in line and ".run" in line]
    assert len(installs) == 2 and toolkit.count("RUN --mount=type=bind,source=packages,") == 2
    assert all("--install-for-all" in line for line in installs)  # as the official images install
    # No CANN variable written by hand: the environment is read from the installed scripts.
    assert not [line for line in toolkit.splitlines() if line.startswith("ENV ")] and "ASCEND_HOME_PATH" not in toolkit
    capture = (out / "toolkit" / "env" / "capture.sh").read_text()
    assert "source /usr/local/Ascend/cann/set_env.sh || exit 1" in capture
    assert "share/info/ascendnpu-ir/bin/set_env.sh" in capture and "nnal/atb/set_env.sh" in capture
    for stage in ("toolkit", "runtime-image"):
        baked = (out / stage / "env" / "Dockerfile").read_text()
        assert 'ENTRYPOINT ["/bin/bash", "-c", "source /usr/local/Ascend/cann/set_env.sh && ' in baked
    runtime = (out / "runtime-image" / "env" / "Dockerfile").read_text()
    assert "TL_ROOT" not in runtime  # tilelang-ascend is not in the runtime image: none of its variables
