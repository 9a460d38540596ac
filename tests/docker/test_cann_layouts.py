"""CANN as it installs, in both layouts (8.3's ascend-toolkit/, 8.5's cann-<ver>/): the images' ENV is
what the toolkit's set_env.sh sets, and the reference components find the toolkit only through it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from builder import lock, manifest
from builder.cli.configuration import cache_root
from builder.engine.docker_engine import DockerEngine
from builder.execute import chain
from builder.execute.chain import BuildOptions, Request
from builder.execute.stage_log import StageFailed
from builder.inputs.site import SiteConfig
from builder.model.arch import Arch
from builder.model.layout import toolkit_layout
from builder.plan import render
from builder.plan.plan_model import EnvCapture
from builder.store.cache import Cache
from builder.verify import probes as probe_specs
from builder.verify.probe_runner import BASH_OWN, tidied
from tests.conftest import ROOT, TEST_PREFIX
from tests.docker.conftest import plan_of, stackbuild


def _config_env(image: str) -> dict[str, str]:
    out = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{json .Config.Env}}", image], capture_output=True, check=True
    )
    return dict(item.split("=", 1) for item in json.loads(out.stdout))


def _stack(workspace: Path, name: str) -> str:
    """The committed stack (reference, in the 8.5 layout, or reference-8.3) in the workspace, locked there."""
    shutil.copy(ROOT / "stacks" / f"{name}.yaml", workspace / "stacks" / f"{name}.yaml")
    stackbuild(workspace, "lock", name, "--arch", str(Arch.host()), check=True)
    return name


@pytest.mark.parametrize("stack", ["reference", "reference-8.3"])
def test_both_layouts_bake_what_set_env_sets_and_smoke(workspace: Path, stack: str) -> None:
    name = _stack(workspace, stack)
    built = stackbuild(workspace, "build", name)
    assert built.returncode == 0, built.stderr[-3000:]
    assert "smoke: launch: passed" in built.stderr
    plan = plan_of(workspace, name)
    layout = toolkit_layout(manifest.load(workspace / "stacks" / f"{name}.yaml").toolkit.version)
    toolkit = plan.stages["toolkit"].tag()
    baked = _config_env(toolkit)
    # Sourced in a clean bash whose PATH is the base's (the image's before anything was baked): the test
    # does not inherit what it checks.
    base_path = _config_env(plan.stages["base-devel"].tag())["PATH"]
    clean_bash = ["env", "-i", f"PATH={base_path}", "bash", "-c", f". {layout.set_env} && env -0"]
    sourced = subprocess.run(
        ["docker", "run", "--rm", "--entrypoint", clean_bash[0], toolkit, *clean_bash[1:]],
        capture_output=True,
        check=True,
    ).stdout.decode()
    expected = dict(item.split("=", 1) for item in sourced.split("\0") if item)
    expected = {k: tidied(k, v) for k, v in expected.items() if k not in BASH_OWN}  # search paths baked tidied
    assert {k: baked.get(k) for k in expected} == expected
    assert expected["ASCEND_TOOLKIT_HOME"] == (layout.install_dir if layout.name == "cann" else layout.home)
    assert expected["CMAKE_PREFIX_PATH"] == f"{expected['ASCEND_TOOLKIT_HOME']}/lib64/cmake"
    # Every image runs its commands through the entrypoint, which sources the scripts again.
    runtime = plan.stages["runtime-image"].tag()
    for image in (toolkit, runtime):
        entry = json.loads(
            subprocess.run(
                ["docker", "image", "inspect", "--format", "{{json .Config.Entrypoint}}", image],
                capture_output=True,
                check=True,
            ).stdout
        )
        assert entry[:2] == ["/bin/bash", "-c"] and f"source {layout.set_env}" in entry[2]
    # tilelang-compiler's own set_env.sh is baked into the devel image the same way (and not into
    # the runtime image, which it does not reach); its PATH entry is what ascend-kernel built with.
    devel = _config_env(plan.stages["devel-image"].tag())
    assert devel["TILELANG_COMPILER_ROOT"] == "/opt/stack/tilelang-compiler"
    assert devel["PATH"].split(":")[0] == "/opt/stack/tilelang-compiler/python/bin"
    assert devel["PYTHONPATH"].split(":")[0] == "/opt/stack/tilelang-compiler/python"
    assert "TILELANG_COMPILER_ROOT" not in _config_env(runtime)
    in_runtime = subprocess.run(
        ["docker", "run", "--rm", runtime, "bash", "-c", "ldd /opt/stack/runtime/build/libascend_runtime.so"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # No driver here: the HAL's stand-in from devlib, which set_env.sh put on LD_LIBRARY_PATH.
    assert f"libascend_hal.so => {expected['ASCEND_TOOLKIT_HOME']}/devlib/libascend_hal.so" in in_runtime


def _without(variable: str) -> str:
    """Shell lines that undo what the scripts did to variable, before the capture reads it."""
    if variable == "PATH":
        return "PATH=$(printf '%s' \"$PATH\" | tr ':' '\\n' | grep -v '^/usr/local/Ascend/' | paste -sd: -)\n"
    return f"unset {variable}\n"


@pytest.mark.parametrize(
    ("variable", "component", "named"),
    [
        ("CMAKE_PREFIX_PATH", "runtime", 'Add the installation prefix of "ACL" to CMAKE_PREFIX_PATH'),
        ("PATH", "ascend-kernel", "the toolkit's compiler is not on PATH"),
    ],
)
def test_a_variable_left_out_of_the_baked_env_fails_the_component_that_needs_it(
    workspace: Path, engine: DockerEngine, monkeypatch: pytest.MonkeyPatch, variable: str, component: str, named: str
) -> None:
    """The environment baked without one variable set_env.sh sets (and without the set-env probe that
    would catch that first): the component that finds the toolkit through it fails, naming it. The
    change is in the capture script, so every stage key differs from the real stack's."""
    real, real_key = render.environment, plan_of(workspace, "reftest").stages["toolkit"].key

    def leaving_out(
        stage: str, locked: lock.Lock, after: Sequence[tuple[str, str]] = (), components: Sequence[str] = ()
    ) -> EnvCapture:
        env_capture = real(stage, locked, after, components)
        capture = env_capture.capture.replace(
            "dump stackbuild-env-after", _without(variable) + "dump stackbuild-env-after"
        )
        assert capture != env_capture.capture
        return EnvCapture(capture, env_capture.dockerfile)

    monkeypatch.setattr(render, "environment", leaving_out)
    monkeypatch.setattr(probe_specs, "toolkit_probes", lambda layout: ())
    path = workspace / "stacks" / "reftest.yaml"
    request = Request(
        manifest.load(path),
        path,
        lock.read(workspace / "lockfiles" / "reftest.lock.json"),
        SiteConfig(),
        Cache(cache_root(os.environ)),
        Arch.host(),
        image_prefix=TEST_PREFIX,
    )
    assert chain.plan(request, print).stages["toolkit"].key != real_key
    options = BuildOptions(jobs=1, live=False, log_dir=workspace / "logs-left-out")
    with pytest.raises(StageFailed) as failed:
        chain.build(request, engine, options, workspace / "provenance-left-out", print)
    message = str(failed.value)
    assert message.startswith(f"stage {component} failed"), message
    assert named in message, message


def test_a_component_env_script_is_what_its_image_and_dependents_get(workspace: Path) -> None:
    """tilelang-compiler's set_env.sh without its PATH line: no variable of ours puts its command on
    PATH, so the stage that calls it by name fails, naming the command."""
    script = workspace / "stacks" / "reference" / "tilelang-compiler" / "set_env.sh"
    old = script.read_text()
    script.write_text("".join(line for line in old.splitlines(keepends=True) if not line.startswith("export PATH=")))
    try:
        stackbuild(workspace, "lock", "reftest", check=True)
        built = stackbuild(workspace, "build", "reftest", "--no-smoke")
    finally:
        script.write_text(old)
        stackbuild(workspace, "lock", "reftest", check=True)
    assert built.returncode == 1, built.stderr[-2000:]
    assert "stage tilelang-compiler failed" in built.stderr, built.stderr[-2000:]
    assert "tilelang-compiler --help" in built.stderr, built.stderr[-2000:]


def _layer_listings(image: str, scratch: Path) -> list[set[str]]:
    """The paths each layer of image holds (files and links; whiteouts left out), bottom first."""
    archive = scratch / "image.tar"
    with archive.open("wb") as out:
        subprocess.run(["docker", "save", image], stdout=out, check=True)
    listings = []
    with tarfile.open(archive) as saved:
        manifest_file = saved.extractfile("manifest.json")
        assert manifest_file is not None
        for layer in json.load(manifest_file)[0]["Layers"]:
            handle = saved.extractfile(layer)
            assert handle is not None
            with tarfile.open(fileobj=handle) as tar:
                listings.append(
                    {"/" + m.name.rstrip("/") for m in tar if not m.isdir() and ".wh." not in m.name.rsplit("/", 1)[-1]}
                )
    archive.unlink()
    return listings


# Where the toolkit, the components and what they install live: a path there is in one layer only.
STACK_PATHS = ("/opt/stack/", "/usr/local/Ascend/", "/usr/local/lib/python3.11/dist-packages/")


@pytest.mark.parametrize("stack", ["reference", "reference-8.3"])
def test_no_layer_holds_an_installer_and_no_parent_tree_is_copied_again(
    workspace: Path, tmp_path: Path, stack: str
) -> None:
    name = _stack(workspace, stack)
    stackbuild(workspace, "build", name, "--no-smoke", check=True)
    plan = plan_of(workspace, name)
    for stage in ("toolkit", "devel-image", "runtime-image"):
        listings = _layer_listings(plan.stages[stage].tag(), tmp_path)
        installers = sorted(p for layer in listings for p in layer if p.endswith((".run", ".zip")))
        assert not installers, f"{stage}: {installers}"
        seen: dict[str, int] = {}
        for n, layer in enumerate(listings):
            for path in layer:
                if path.startswith(STACK_PATHS):
                    assert path not in seen, f"{stage}: {path} in layers {seen[path]} and {n}"
                    seen[path] = n


def test_the_8_5_runtime_image_is_canns_runtime_subset_and_loads_whole(workspace: Path, engine: DockerEngine) -> None:
    """From 8.5.0 the runtime image is the toolkit installed with --whitelist=nnrt (ascend-deployer's
    runtime-only install), /etc/Ascend and the AICPU package kept; every ELF file in it finds what it
    needs (the closure probe, which the build ran); one whose library is taken away fails that probe,
    naming the library."""
    name = _stack(workspace, "reference")
    built = stackbuild(workspace, "build", name)
    assert built.returncode == 0, built.stderr[-3000:]
    assert "smoke: launch: passed" in built.stderr
    runtime = plan_of(workspace, name).stages["runtime-image"].tag()
    home = toolkit_layout("8.5.0").install_dir
    looked = subprocess.run(
        ["docker", "run", "--rm", runtime, "bash", "-c",
         f"cat {home}/*/install.conf /etc/Ascend/ascend_cann_install.info; ls {home}/opp/Ascend/aicpu;"
         f" ls -d {home}/tools {home}/include 2>&1 || true"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "whitelist=nnrt" in looked.splitlines() and f"Toolkit_InstallPath={home}" in looked
    assert "Ascend-aicpu_syskernels.tar.gz" in looked and "No such file" in looked  # no compiler, no headers
    [passed] = probe_specs.run_probes(engine, runtime, "/opt/stack", [probe_specs.closure_probe()])
    assert passed.ok, passed.message
    broken = f"{TEST_PREFIX}/runtime-without-acl:test"
    subprocess.run(
        ["docker", "build", "-q", "-t", broken, "-"],
        input=f"FROM {runtime}\nRUN rm {home}/lib64/libascendcl.so\n", text=True, capture_output=True, check=True,
    )  # fmt: skip
    try:
        [failed] = probe_specs.run_probes(engine, broken, "/opt/stack", [probe_specs.closure_probe()])
    finally:
        subprocess.run(["docker", "image", "rm", broken], capture_output=True)
    assert not failed.ok and "libascendcl.so not found" in failed.message, failed.message
    assert "/opt/stack/runtime/build/libascend_runtime.so" in failed.message
