import re
from dataclasses import asdict
from pathlib import Path

import pytest

from builder import lock as lock_io
from builder import manifest
from builder.inputs import wheels
from builder.lock.locked import LockedWheel
from builder.manifest import compat
from builder.manifest.versions import version_key
from builder.model.arch import Arch
from builder.store.cache import Cache
from tests.conftest import ROOT
from tests.helpers import http_server, run_cli
from tests.unit.inputs.test_system_packages import _simple_index
from tests.wheelhouse import make_wheel


def load(name: str) -> manifest.Manifest:
    return manifest.load(ROOT / "stacks" / f"{name}.yaml")


def test_current_stack_is_compatible() -> None:
    report = compat.check(load("8.5.0"))
    assert report.ok and report.warnings == []


def test_a_known_mismatch_with_the_distributions_python_is_refused_unless_the_base_brings_its_own(
    tmp_path: Path,
) -> None:
    text = (ROOT / "stacks" / "8.5.0.yaml").read_text().replace('python: "3.10"', 'python: "3.11"')
    start, end = text.index("\nbase:") + 1, text.index("\ncomponents:") + 1
    image_based = text[:start] + f"base:\n  image: ubuntu@sha256:{'0' * 64}\n" + text[end:]
    bootstrapped = text[:start] + "base:\n  bootstrap: {suite: bookworm, mirror: 'http://deb.debian.org/debian'}\n"
    bootstrapped += text[end:]
    bootstrapped = bootstrapped.replace("os: ubuntu", "os: debian").replace('os_version: "22.04"', 'os_version: "12"')
    path = tmp_path / "m.yaml"

    def errors(text: str) -> list[str]:
        path.write_text(text)
        return compat.check(manifest.load(path)).errors

    assert errors(image_based) == [
        'ubuntu 22.04 ships Python 3.10, the stack says 3.11 (python_from: distribution): say python: "3.10", '
        "or python_from: base if the base image installs its own (the base stage probes it)"
    ]
    assert errors(image_based.replace('  python: "3.11"\n', '  python: "3.11"\n  python_from: base\n')) == []
    assert errors(bootstrapped.replace('python: "3.11"', 'python: "3.10"')) == [
        'debian 12 ships Python 3.11, the stack says 3.10 (python_from: distribution): say python: "3.11"'
    ]
    assert errors(bootstrapped) == []
    assert errors(bootstrapped.replace('  python: "3.11"\n', '  python: "3.11"\n  python_from: base\n')) == [
        "python_from: base needs a base image that installs Python; a bootstrapped base has only the "
        "distribution's python3: say python_from: distribution"
    ]


def test_63rc1_is_the_310p_release_and_on_910b_is_known_bad(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The shipped 6.3.RC1 stack is the release as Huawei made it (310P, its driver and firmware) and
    checks clean; the same release on 910B is refused with the fact first and the release to start
    from, as bad input (exit 2, no traceback), unless allowed."""
    shipped = compat.check(load("6.3.RC1"))
    assert shipped.ok and shipped.warnings == [], shipped
    assert shipped.checked[:3] == [
        "chip 310p among those CANN 6.3.RC1 is released for (docs package list (310P only))",
        "host driver 23.0.rc1 against CANN 6.3.RC1's 23.0.rc1",
        "host firmware 6.3.0.1.241 against CANN 6.3.RC1's 6.3.0.1.241",
    ]
    on_910b = variant(tmp_path, "", "", source=ROOT / "stacks" / "6.3.RC1.yaml", chip="910b")
    assert compat.check(on_910b).errors == [
        "CANN 6.3.RC1 does not support chip 910b: it is released for 310p only (docs package list (310P only)); "
        "for 910b, start from a release that has it: `stackbuild new 9.0.0 --chip 910b`"
    ]
    path = str(tmp_path / "v.yaml")
    code, _, err = run_cli(capsys, "check", path)
    lines = err.strip().splitlines()
    assert code == 2 and lines[0].startswith("compat: error: CANN 6.3.RC1 does not support chip 910b"), err
    assert lines[-1].startswith("stackbuild: error: ") and "--allow-unsupported" in err and "traceback" not in err
    code, out, _ = run_cli(capsys, "check", path, "--allow-unsupported")
    assert code == 0 and "compatible: 6.3.RC1" in out


def test_reference_stack_skips_cann_data() -> None:
    report = compat.check(load("reference"))
    assert report.ok and report.notes == ["CPU simulation (reference stack): no CANN compatibility data applies"]


def variant(
    tmp_path: Path, old: str, new: str, source: Path = ROOT / "stacks" / "8.5.0.yaml", chip: str | None = None
) -> manifest.Manifest:
    """source's text with old replaced by new (and the toolkit's chip by chip), loaded from tmp_path/v.yaml."""
    text = source.read_text().replace(old, new) if old else source.read_text()
    if chip is not None:
        text = re.sub(r"(?m)^  chip: \S+$", f"  chip: {chip}", text)
    path = tmp_path / "v.yaml"
    path.write_text(text)
    return manifest.load(path)


def test_driver_older_than_required_fails_newer_warns(tmp_path: Path) -> None:
    older = compat.check(variant(tmp_path, "driver: 25.5.0", "driver: 25.3.RC1"))
    assert older.errors == ["host driver 25.3.RC1 is older than CANN 8.5.0 needs (25.5.0)"]
    newer = compat.check(variant(tmp_path, "driver: 25.5.0", "driver: 26.0.RC1"))
    assert newer.ok and "is not the one CANN 8.5.0 is released with" in newer.warnings[0]


def test_unknown_release_and_os_warn(tmp_path: Path) -> None:
    unknown = compat.check(variant(tmp_path, "version: 8.5.0", "version: 8.4.0"))
    assert unknown.ok and "CANN 8.4.0 is not in the catalog" in unknown.warnings[0]
    debian = compat.check(variant(tmp_path, "os: ubuntu", "os: debian"))
    assert debian.ok and any("not an OS of the official CANN images" in w for w in debian.warnings)


def test_package_differing_from_catalog_fails(tmp_path: Path) -> None:
    tampered = variant(tmp_path, "5637d98ef0974dd7fe848e8e341d62ff36c89cf47e929114f6a628f32072251a", "a" * 64)
    assert any("toolkit package for x86_64 differs from the catalog" in e for e in compat.check(tampered).errors)


def test_version_order() -> None:
    assert version_key("25.3.rc1") < version_key("25.3.0") < version_key("25.3.1")
    assert version_key("25.3.RC1") == version_key("25.3.rc1")


@pytest.mark.parametrize(
    ("pin", "error"),
    [
        ("torch-npu==2.14.0", "torch-npu 2.14.0 with CANN 8.5.0: the catalog does not list it"),
        ("torch_npu==2.6.0.post3", "torch-npu 2.6.0.post3 with CANN 8.5.0: it pairs with CANN 8.3.RC1"),
        ("torch-npu==2.9.0", None),
    ],
)
def test_torch_npu_is_checked_against_the_catalogs_pairing(pin: str, error: str | None) -> None:
    """From ascend-deployer's version_match.json as installed, never a table of ours."""
    stack = load("8.5.0")
    components = [
        c.model_copy(update={"python_packages": [pin]}) if c.id == "tilelang-ascend" else c for c in stack.components
    ]
    errors = compat.check(stack.model_copy(update={"components": components})).errors
    if error is None:
        assert errors == []
    else:
        (only,) = errors
        assert only.startswith(f"component tilelang-ascend: {error}; ")
        assert "pairs CANN 8.5.0 with torch-npu 2.6.0.post5, 2.7.1.post2, 2.8.0.post2, 2.9.0" in only


def _paired_stack(text: str, indexes: str) -> str:
    """The 8.5.0 manifest on an image base, with no system packages (nor the compile cache's tool: apt
    resolves both against the image) and one path component pinning the catalog's pairing (torch 2.9.0,
    torch-npu 2.9.0) from these indexes."""
    start, end = text.index("\nbase:") + 1, text.index("\n", text.index("keyring:")) + 1
    text = text[:start] + f"base:\n  image: ubuntu@sha256:{'0' * 64}\n" + text[end:]
    text = re.sub(r"(?m)^ *((runtime_)?system_packages|compile_cache): .*\n", "", text)
    text = text.replace("name: 8.5.0", "name: paired")
    text = re.sub(r"(?m)^python_index: .*$", f"python_index: {indexes}", text)
    components = (
        "components:\n  - id: app\n    source: {path: app}\n    python_packages: [torch==2.9.0, torch-npu==2.9.0]\n"
    )
    return text[: text.index("components:\n")] + components + text[text.index("smoke:\n") :]


@pytest.mark.parametrize("arch", ["aarch64", "x86_64"])
def test_check_accepts_the_catalogs_pairing_as_locked_and_refuses_a_lock_that_breaks_its_requires_dist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], arch: str
) -> None:
    """torch-npu 2.9.0 requires torch==2.9.0 on aarch64 (PyPI has it) and torch==2.9.0+cpu on x86_64
    (only PyTorch's CPU index has it: a loopback stand-in here, first in python_index). Locked from
    stand-ins of those indexes, `check` accepts the pair; with torch swapped for PyPI's plain 2.9.0 in
    the lock on x86_64 (the CUDA build), it refuses, naming both versions."""
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))
    platform = f"cp310-cp310-manylinux_2_28_{arch}"
    npu_requires = "torch==2.9.0+cpu" if arch == "x86_64" else "torch==2.9.0"
    pypi = [
        make_wheel(tmp_path / "pypi", "torch", "2.9.0", tag=platform),
        make_wheel(tmp_path / "pypi", "torch_npu", "2.9.0", tag=platform, requires=[npu_requires]),
    ]
    cpu = [make_wheel(tmp_path / "cpu", "torch", "2.9.0+cpu", tag=platform)]
    root = tmp_path / "project"
    (root / "stacks" / "app").mkdir(parents=True)
    (root / "stacks" / "app" / "main.py").write_text("print('app')\n")
    with http_server(_simple_index(pypi)) as pypi_url, http_server(_simple_index(cpu)) as cpu_url:
        indexes = f'["{cpu_url}/", "{pypi_url}/"]' if arch == "x86_64" else f'["{pypi_url}/"]'
        text = _paired_stack((ROOT / "stacks" / "8.5.0.yaml").read_text(), indexes)
        (root / "stacks" / "paired.yaml").write_text(text)
        code, _, err = run_cli(capsys, "--root", str(root), "lock", "paired", "--arch", arch)
        assert code == 0, err
        if arch == "x86_64":  # PyPI's plain torch fetched too, to swap it in below
            pypi_torch = wheels.resolve(
                ["torch==2.9.0"], f"{pypi_url}/", tmp_path, _target(arch), Cache(tmp_path / "cache")
            )[0]
    locked = lock_io.read(root / "lockfiles" / "paired.lock.json")
    torch = next(w for w in locked.architectures[Arch(arch)].python["app"] if w.name == "torch")
    assert torch.version == ("2.9.0+cpu" if arch == "x86_64" else "2.9.0")
    code, out, err = run_cli(capsys, "--root", str(root), "check", "paired")
    assert code == 0 and "compatible: paired" in out, err
    if arch == "aarch64":
        return
    section = locked.architectures[Arch.X86_64]
    swapped = [LockedWheel(**asdict(pypi_torch)) if w.name == "torch" else w for w in section.python["app"]]
    broken = locked.model_copy(
        update={
            "architectures": locked.architectures
            | {Arch.X86_64: section.model_copy(update={"python": {"app": swapped}})}
        }
    )
    lock_io.write(broken.sealed(), root / "lockfiles" / "paired.lock.json")
    code, _, err = run_cli(capsys, "--root", str(root), "check", "paired")
    assert code == 1, err
    assert "torch_npu 2.9.0 requires torch==2.9.0+cpu, the lock has torch 2.9.0" in err, err


def _target(arch: str) -> wheels.Target:
    return wheels.Target("3.10", Arch(arch), 35)


def test_check_lists_only_the_checks_that_ran(capsys: pytest.CaptureFixture[str]) -> None:
    """8.5.0's committed lock has no wheels (PyTorch's index unresolved for both architectures): `check`
    says it did not check their Requires-Dist, and why, instead of claiming it did; 6.3.RC1, with no
    component and no sha256, claims no upstream, torch-npu or catalog-sha256 check."""
    code, out, err = run_cli(capsys, "--root", str(ROOT), "check", "8.5.0")
    assert code == 0 and "Requires-Dist" not in out, out
    for arch in ("x86_64", "aarch64"):
        assert (
            f"check: note: Requires-Dist not checked for the {arch} python packages of tilelang-ascend: "
            "unresolved in 8.5.0.lock.json"
        ) in err, err
    code, out, err = run_cli(capsys, "--root", str(ROOT), "check", "6.3.RC1")
    assert code == 0, err
    assert [line.split(" against ")[0] for line in out.splitlines() if line.startswith("checked")] == [
        "checked  chip 310p among those CANN 6.3.RC1 is released for (docs package list (310P only))",
        "checked  host driver 23.0.rc1",
        "checked  host firmware 6.3.0.1.241",
        "checked  OS ubuntu 22.04, Python 3.10",
    ]
