"""The shipped 8.5.0 stack rendered for x86_64 against golden files (tests/golden/8.5.0-x86_64/): the
toolkit's packages never become a layer, the environment comes from the installed set_env.sh."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from builder import lock as lock_io
from builder import manifest
from builder.execute import chain
from builder.inputs.site import SiteConfig
from builder.model.arch import Arch
from builder.plan.prepare import Request
from builder.store.cache import Cache
from tests.conftest import ROOT
from tests.helpers import run_cli

GOLDEN = ROOT / "tests" / "golden" / "8.5.0-x86_64"
UPDATE = os.environ.get("STACKBUILD_UPDATE_GOLDEN") == "1"


def _rendered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))  # offline, from an empty cache
    monkeypatch.delenv("STACKBUILD_IMAGE_PREFIX")  # the names a user's stackbuild gives, as the golden files
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


def test_the_8_5_0_components_install_their_python_and_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _rendered(tmp_path, monkeypatch, capsys)
    # catlass builds on the toolkit's Ascend C (find_package(ASC)): no other stage is copied into its own.
    catlass = (out / "catlass.Dockerfile").read_text()
    assert "COPY --from=" not in catlass and "FROM toolkit\n" in catlass
    # tilelang-ascend's requirements are its locked python_packages, installed before install_ascend.sh
    # (whose pip then finds each satisfied) and carried into the devel image; it builds with no network.
    # Its module is imported in its stage and in the devel image; its set_env.sh is sourced, never
    # written out as ENV.
    devel = (out / "devel-image.Dockerfile").read_text()
    packages = "/opt/stack/tilelang-ascend/.python-packages"
    tilelang = (out / "tilelang-ascend.Dockerfile").read_text()
    assert f"--target {packages} -r /tmp/stackbuild-wheels/requirements.txt" in tilelang
    assert "with-network" not in tilelang and "with-network" not in catlass
    assert f'COPY --from=tilelang-ascend ["{packages}", "{packages}"]' in devel
    assert "TL_ROOT" not in devel and "TL_ROOT" not in (out / "tilelang-ascend.Dockerfile").read_text()
    script = "/opt/stack/tilelang-ascend/set_env.sh"
    for stage in ("tilelang-ascend", "devel-image"):
        assert f"source {script} || exit 1" in (out / stage / "env" / "capture.sh").read_text()
        assert f"source {script} && exec" in (out / stage / "env" / "Dockerfile").read_text()
    path = ROOT / "stacks" / "8.5.0.yaml"
    locked = lock_io.read(ROOT / "lockfiles" / "8.5.0.lock.json")
    request = Request(manifest.load(path), path, locked, SiteConfig(), Cache(tmp_path / "c"), Arch.X86_64)
    stages = chain.plan(request, print).stages
    for stage in ("tilelang-ascend", "devel-image"):
        assert {"kind": "imports", "modules": ["tilelang"]} in stages[stage].probes
