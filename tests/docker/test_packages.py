"""System and Python packages, git checkouts and toolkit layouts, proven in real stages.

The apt repository and the wheelhouse are made by the tests and served on loopback; the keep_git
test takes git from the base's own Debian mirror (the one the base is bootstrapped from).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from builder.cli.configuration import cache_root
from builder.engine.docker_engine import DockerEngine
from builder.store.cache import Cache
from tests.conftest import REFERENCE, TEST_PREFIX
from tests.debrepo import make_deb, serve, write_index
from tests.docker.conftest import plan_of, stackbuild, write_variant
from tests.helpers import lib_with_submodule
from tests.wheelhouse import make_wheel

HARNESS = "  - id: harness\n    source: {path: reference/harness}\n    depends_on: [runtime, ascend-kernel]\n"
DPKG_QUERY = ["dpkg-query", "-W", "-f", "${Package}=${Version}\\n", "sbdemo-tool", "sbdemo-lib"]


def publish(repo: Path, version: str) -> None:
    """The repository serves sbdemo-tool and sbdemo-lib at version (and nothing older)."""
    shutil.rmtree(repo / "pool", ignore_errors=True)
    pool = repo / "pool" / "main"
    make_deb(pool, "sbdemo-lib", version, files={"usr/share/sbdemo/lib": version})
    make_deb(
        pool, "sbdemo-tool", version, depends=[f"sbdemo-lib (>= {version})"], files={"usr/share/sbdemo/tool": version}
    )
    write_index(repo)


@pytest.fixture
def repository(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    repo = tmp_path / "apt"
    publish(repo, "1.0")
    with serve(repo) as url:
        yield repo, url


def wheelhouse(directory: Path) -> Path:
    """Different wheels per architecture (sbwheel 1.0 on x86_64, 0.9 on aarch64), a shared pure
    dependency, and the reference harness's own simreport."""
    for version, tag in (("1.0", "py3-none-manylinux2014_x86_64"), ("0.9", "py3-none-manylinux2014_aarch64")):
        modules = {"sbwheel/__init__.py": f"VERSION = {version!r}\n"}
        make_wheel(directory, "sbwheel", version, tag, modules=modules, requires=["sbdep>=2.0"])
    make_wheel(directory, "sbdep", "2.0", modules={"sbdep/__init__.py": "ANSWER = 42\n"})
    shutil.copy(next((REFERENCE / "wheelhouse").glob("simreport-*.whl")), directory)
    return directory


def locked_debs(lock: dict, arch: str, component: str) -> list[dict]:  # type: ignore[type-arg]
    return lock["architectures"][arch]["system"]["components"][component]  # type: ignore[no-any-return]


def test_packages_are_locked_per_architecture_and_installed_offline_at_the_locked_versions(
    workspace: Path, engine: DockerEngine, repository: tuple[Path, str], tmp_path: Path
) -> None:
    repo, url = repository
    wheels = wheelhouse(tmp_path / "wheels")
    name = write_variant(
        workspace,
        "reftest-packages",
        [
            (
                "python_index: reference/wheelhouse\n",
                f"python_index: {wheels}\napt_repositories:\n  - {{url: '{url}', suite: stable, trusted: true}}\n",
            ),
            (
                "runtime_system_packages: [python3, python3-numpy]",
                "runtime_system_packages: [python3, python3-numpy, sbdemo-lib]",
            ),
            (HARNESS, HARNESS + "    system_packages: [sbdemo-tool]\n"),
            ("    python_packages: [simreport==1.0]\n", "    python_packages: [simreport==1.0, sbwheel]\n"),
        ],
    )
    stackbuild(workspace, "lock", name, "--arch", "x86_64", check=True)
    lock_path = workspace / "lockfiles" / f"{name}.lock.json"
    lock = json.loads(lock_path.read_text())
    # The closure in apt's install order: the dependency first.
    assert [(d["name"], d["version"]) for d in locked_debs(lock, "x86_64", "harness")] == [
        ("sbdemo-lib", "1.0"),
        ("sbdemo-tool", "1.0"),
    ]
    # --arch x86_64 resolves that architecture only (aarch64's pins: tests/unit/inputs/test_system_packages.py).
    pins = {
        a: {w["name"]: w["version"] for w in s.get("python", {}).get("harness", [])}
        for a, s in lock["architectures"].items()
    }
    assert pins == {"x86_64": {"sbwheel": "1.0", "sbdep": "2.0", "simreport": "1.0"}, "aarch64": {}}

    # The repository moves on: 1.0 is gone, 1.1 offered. The lock's .debs (in the cache) still go in.
    publish(repo, "1.1")
    checked = stackbuild(workspace, "lock", "--check", name)
    assert checked.returncode == 0, checked.stderr  # mirror drift is reported, not a failure
    assert f"note: x86_64 system package sbdemo-lib 1.0: gone from {url} (in the cache)" in checked.stderr
    run = stackbuild(workspace, "build", name, "--frozen")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "smoke: launch: passed" in run.stderr
    harness = plan_of(workspace, name).stages["harness"].tag()
    assert sorted(engine.run(harness, DPKG_QUERY).output.split()) == ["sbdemo-lib=1.0", "sbdemo-tool=1.0"]
    runtime = plan_of(workspace, name).final_tags["runtime-image"]
    assert engine.run(runtime, [*DPKG_QUERY[:-2], "sbdemo-lib"]).output.split() == ["sbdemo-lib=1.0"]
    imported = engine.run(harness, ["python3", "-c", "import sbwheel, sbdep; print(sbwheel.VERSION, sbdep.ANSWER)"])
    assert imported.output.strip() == "1.0 42", imported.output

    # Served nowhere any more (not even the cache): --frozen refuses, naming the fix; a build goes on with 1.1.
    cache = Cache(cache_root(os.environ))
    for deb in locked_debs(lock, "x86_64", "harness"):
        if deb["name"].startswith("sbdemo-"):
            cache.blob(deb["sha256"]).unlink()
    frozen = stackbuild(workspace, "build", name, "--frozen")
    assert frozen.returncode != 0
    assert "sbdemo-lib_1.0_all.deb (sbdemo-lib 1.0, locked) is in neither the cache" in frozen.stderr
    assert f"relock with `stackbuild lock {name}`" in frozen.stderr
    moved = stackbuild(workspace, "build", name, "--no-smoke")
    assert moved.returncode == 0, moved.stderr[-3000:]
    assert "note: sbdemo-lib 1.0 (locked) gone -> 1.1" in moved.stderr
    assert "note: sbdemo-tool 1.0 (locked) gone -> 1.1" in moved.stderr
    images = [t for t in engine.tags(f"{TEST_PREFIX}/stage/harness") if t != harness]
    assert any(
        sorted(engine.run(t, DPKG_QUERY).output.split()) == ["sbdemo-lib=1.1", "sbdemo-tool=1.1"] for t in images
    )


def test_keep_git_gives_the_build_a_checkout_with_submodules_and_tags_without_network(
    workspace: Path, engine: DockerEngine, tmp_path: Path
) -> None:
    repos = lib_with_submodule(tmp_path, tag="v2.0.1")
    component = (
        "  - id: gitdemo\n"
        f"    source: {{git: 'file://{repos}/lib.git', ref: v2.0.1, keep_git: true}}\n"
        "    system_packages: [git]\n"
        "    build:\n"
        "      - git submodule update --init --recursive\n"
        "      - git describe --tags > described.txt\n"
        "      - (cat 3rdparty/dep/README; echo; ls /sys/class/net) >> described.txt\n"
        "    artifacts: [{path: described.txt}]\n"
    )
    name = write_variant(workspace, "reftest-git", [("components:\n", "components:\n" + component)])
    stackbuild(workspace, "lock", name, "--arch", "x86_64", check=True)
    run = stackbuild(workspace, "build", name, "--no-smoke")
    assert run.returncode == 0, run.stderr[-3000:]
    stage = plan_of(workspace, name).stages["gitdemo"]
    assert not stage.network
    described = engine.run(stage.tag(), ["cat", "/opt/stack/gitdemo/described.txt"]).output.split()
    assert described == ["v2.0.1", "dep", "v1", "lo"]


def test_two_components_installing_the_same_file_are_refused_naming_both(workspace: Path) -> None:
    shared = "      - mkdir -p /usr/local/shared && echo {0} > /usr/local/shared/tool\n"
    name = write_variant(
        workspace,
        "reftest-collide",
        [
            (
                "--no-index --break-system-packages .\n    installs:\n"
                "      - {path: /usr/local/lib/python3.11/dist-packages}\n",
                "--no-index --break-system-packages .\n" + shared.format("a") + "    installs:\n"
                "      - {path: /usr/local/lib/python3.11/dist-packages}\n      - {path: /usr/local/shared}\n",
            ),
            (
                "      - cmake --build build\n",
                "      - cmake --build build\n" + shared.format("b") + "    installs: [{path: /usr/local/shared}]\n",
            ),
        ],
    )
    stackbuild(workspace, "lock", name, "--arch", "x86_64", check=True)
    run = stackbuild(workspace, "build", name, "--no-smoke")
    assert run.returncode != 0
    # Checked before either final image (whichever starts first fails).
    assert re.search(
        r"stage (devel|runtime)-image failed: /usr/local/shared/tool is installed by both tilelang and runtime",
        run.stderr,
    )


def test_installs_reach_dependents_and_the_final_images(workspace: Path, engine: DockerEngine) -> None:
    """tilelang installs into the image's site-packages: what it added there reaches its dependents and
    the devel image, not the runtime image (not a runtime install). The Ascend C devkit comes inside the
    toolkit package: ascend-kernel links against its library in the toolkit's lib64, which both final
    images have (the runtime image's runtime-only install, --whitelist=nnrt, keeps it)."""
    run = stackbuild(workspace, "build", "reftest")
    assert run.returncode == 0, run.stderr[-3000:]
    plan = plan_of(workspace, "reftest")
    install = "/usr/local/lib/python3.11/dist-packages"
    assert {"kind": "exists", "paths": [install]} in plan.stages["tilelang"].probes  # checked before it was tagged
    module = f"{install}/tilelang/parser.py"
    for image in (plan.stages["ascend-kernel"].tag(), plan.final_tags["devel-image"]):
        assert engine.run(image, ["test", "-f", module]).exit_code == 0, image
    assert engine.run(plan.final_tags["runtime-image"], ["test", "-e", module]).exit_code == 1
    # In the 8.5 layout ASCEND_HOME_PATH is the real directory (set_env.sh names it), so the kernel
    # links the devkit's library there, not through the cann link.
    library = "/usr/local/Ascend/cann-8.5.0/lib64/libascendc.so"
    kernel = "/opt/stack/ascend-kernel/build/libascend_kernel.so"
    linked = engine.run(plan.stages["ascend-kernel"].tag(), ["ldd", kernel]).output
    assert f"libascendc.so => {library}" in linked
    for final in plan.final_tags.values():
        assert engine.run(final, ["test", "-f", library]).exit_code == 0


def test_the_reference_stack_builds_and_smokes_in_the_8_5_toolkit_layout(workspace: Path, engine: DockerEngine) -> None:
    """The reference toolkit is packed as CANN 8.5.0 (real file names, cann-8.5.0/ and the cann link):
    render, probes, the runtime image and the smoke all take the layout from the one table. The old
    entry points stay as links through the cann link, as the 8.5.0 installer leaves them."""
    run = stackbuild(workspace, "build", "reftest")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "smoke: launch: passed" in run.stderr
    runtime = plan_of(workspace, "reftest").final_tags["runtime-image"]
    layout = engine.run(
        runtime,
        [
            "bash",
            "-c",
            "readlink /usr/local/Ascend/cann /usr/local/Ascend/ascend-toolkit/latest; echo $ASCEND_TOOLKIT_HOME;"
            " ls /usr/local/Ascend",
        ],
    )
    # ASCEND_TOOLKIT_HOME is the real directory, as CANN 8.5.0's set_env.sh has it once installed.
    assert layout.output.split() == [
        "cann-8.5.0",
        "../cann",
        "/usr/local/Ascend/cann-8.5.0",
        "ascend-toolkit",
        "cann",
        "cann-8.5.0",
    ]


def test_the_reference_stack_builds_from_bare_run_files(workspace: Path) -> None:
    """The other form Huawei ships (the official images download the bare .run from the catalog's
    folder): no signature, so no trust; the sha256 pin is the check. The reference stack builds and
    smokes from it as from its signed zips."""
    replacements = [("  trust: [reference/toolkit/test-ca/ca.pem]\n", "")]
    for arch, package in itertools.product(("x86_64", "aarch64"), ("toolkit", "910b-ops")):
        run = f"Ascend-cann-{package}_8.5.0_linux-{arch}.run"
        signing = (
            f"\n          && python3 reference/toolkit/sign.py --run {{output_dir}}/{run} --output-dir {{output_dir}}"
        )
        replacements += [(run.replace(".run", ".zip\n"), f"{run}\n"), (signing, "")]
    name = write_variant(workspace, "reftest-bare-run", replacements)
    stackbuild(workspace, "lock", name, "--arch", "x86_64", check=True)
    locked = json.loads((workspace / "lockfiles" / f"{name}.lock.json").read_text())
    assert [p["file"] for p in locked["architectures"]["x86_64"]["packages"]] == [
        "Ascend-cann-toolkit_8.5.0_linux-x86_64.run",
        "Ascend-cann-910b-ops_8.5.0_linux-x86_64.run",
    ]
    built = stackbuild(workspace, "build", name)
    assert built.returncode == 0, built.stderr[-3000:]
    assert "smoke: launch: passed" in built.stderr
