"""Every shipped stack is what the README says it is: each one with a committed lock renders for each
of its architectures, hadolint-clean, from that lock alone (offline, an empty cache), and plans the
stage keys recorded for it (tests/golden/shipped-stage-keys.json: a refactor that changes none of
what a stage is made of keeps every key); the README's table of shipped stacks has one row per
manifest under stacks/."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from builder import lock as lock_io
from builder import manifest
from builder.execute import chain
from builder.inputs.site import SiteConfig
from builder.plan.prepare import Request
from builder.store.cache import Cache
from tests.conftest import ROOT
from tests.helpers import hadolint, run_cli

LOCKED = sorted(p.name.removesuffix(".lock.json") for p in (ROOT / "lockfiles").glob("*.lock.json"))
STAGE_KEYS = ROOT / "tests" / "golden" / "shipped-stage-keys.json"


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


def test_each_locked_shipped_stack_plans_the_stage_keys_recorded_for_it(tmp_path: Path) -> None:
    """Planned offline from the committed lock and an empty cache, as `plan` does. After a change
    that means to alter what stages are made of (a template, a stack's tree), rewrite the record with
    STACKBUILD_UPDATE_GOLDEN=1 and review its diff."""
    keys: dict[str, dict[str, dict[str, str]]] = {}
    for stack in LOCKED:
        path = ROOT / "stacks" / f"{stack}.yaml"
        loaded, locked = manifest.load(path), lock_io.read(ROOT / "lockfiles" / f"{stack}.lock.json")
        keys[stack] = {}
        for arch in loaded.platform.architectures:
            request = Request(loaded, path, locked, SiteConfig(), Cache(tmp_path / "cache"), arch)
            planned = chain.plan(request, say=lambda _: None)
            keys[stack][str(arch)] = {stage.name: stage.key for stage in planned.order()}
    if os.environ.get("STACKBUILD_UPDATE_GOLDEN") == "1":
        STAGE_KEYS.write_text(json.dumps(keys, indent=1) + "\n")
        pytest.skip(f"stage keys rewritten: review `git diff {STAGE_KEYS.relative_to(ROOT)}`")
    assert keys == json.loads(STAGE_KEYS.read_text())


def test_the_readme_lists_every_shipped_stack_once() -> None:
    """The README's table of shipped stacks: a row (`| \\`NAME\\` | ...`) for each stacks/*.yaml, no other."""
    readme = (ROOT / "README.md").read_text()
    rows = re.findall(r"(?m)^\| `([^`]+)` \|", readme)
    assert sorted(rows) == sorted(p.stem for p in (ROOT / "stacks").glob("*.yaml"))


def test_the_6_3_rc1_stack_locks_against_stand_ins_of_its_packages_and_renders_hadolint_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """6.3.RC1 has no committed lock (no sha256 is published: a lock needs Huawei's host). Locked here
    with that host pointed at a loopback stand-in serving every file (on an image base, so nothing is
    bootstrapped), it pins the one no-architecture kernels file for both architectures and renders
    for each, hadolint-clean: its pre-8.5 toolkit and runtime templates as a real lock would give them."""
    from tests.helpers import http_server, serving_bytes
    from tests.unit.lock.test_lock import on_image, without_system_packages

    root = tmp_path / "project"
    (root / "stacks").mkdir(parents=True)
    text = on_image((ROOT / "stacks" / "6.3.RC1.yaml").read_text())
    (root / "stacks" / "6.3.RC1.yaml").write_text(without_system_packages(text))
    served = b"a stand-in of a CANN 6.3.RC1 installer"
    with http_server(serving_bytes(lambda: served)) as url:
        site = tmp_path / "site.yaml"
        site.write_text(
            f"url_rewrites:\n  - {{from: 'https://ascend-repo.obs.cn-east-2.myhuaweicloud.com/', to: '{url}/'}}\n"
        )
        base = ["--root", str(root), "--site-config", str(site)]
        code, _, err = run_cli(capsys, *base, "lock", "6.3.RC1", "--arch", "x86_64", "--arch", "aarch64")
        assert code == 0, err
    locked = lock_io.read(root / "lockfiles" / "6.3.RC1.lock.json")
    ops = {
        arch: next(p.file for p in section.packages if p.role == "ops")
        for arch, section in locked.architectures.items()
    }
    assert set(ops.values()) == {"Ascend-cann-kernels-310p_6.3.RC1_linux.run"} and len(ops) == 2
    for arch in ("x86_64", "aarch64"):
        code, _, err = run_cli(capsys, *base, "render", "6.3.RC1", "--arch", arch, "-o", str(tmp_path / arch))
        assert code == 0, err
    files = sorted(tmp_path.glob("*/*.Dockerfile"))
    lint = hadolint(files)
    assert len(files) == 2 * 5 and lint.returncode == 0, lint.stdout + lint.stderr
