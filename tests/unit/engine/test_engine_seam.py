"""The engine seam as docs/architecture.md describes it ("A new engine"): a second engine is one module
in builder/engine/ and its line in `connect()` and `launcher()`, the only places engines are made.
Nothing under builder/ but the engine package imports docker-py, runs the docker binary or imports
its Docker modules (host setup, which installs Docker, apart); what doctor, run and shell ask goes
through the Protocols, so the fake engine serves them. The Protocols stay small (an Engine of at
most eleven methods, normalising's store access and people's launch lines apart), and bench/ and
the docker tier call the build chain rather than its steps."""

from __future__ import annotations

import ast
import inspect
import json
import shlex
from pathlib import Path

import pytest

from builder.cli import running
from builder.cli.context import Context
from builder.engine import BuildEngine, Engine, Launcher, LayerStore
from tests.conftest import ROOT
from tests.fake_engine import FakeEngine
from tests.helpers import ascend_host, run_cli

MAKER = ROOT / "builder" / "engine" / "__init__.py"
ENGINE_PACKAGE = ROOT / "builder" / "engine"
ENGINE_CLASSES = {"DockerEngine", "DockerLauncher"}  # what connect() and launcher() make
# Calls whose first argument is the program they start, or look up on PATH.
PROGRAM_CALLS = {
    "subprocess.run",
    "subprocess.Popen",
    "subprocess.call",
    "subprocess.check_call",
    "subprocess.check_output",
    "os.system",
    "os.popen",
    "os.execv",
    "os.execve",
    "os.execvp",
    "os.execvpe",
    "os.execl",
    "os.execlp",
    "os.spawnv",
    "os.spawnvp",
    "os.posix_spawn",
    "os.posix_spawnp",
    "shutil.which",
    "asyncio.create_subprocess_exec",
    "asyncio.create_subprocess_shell",
}
# Modules of the engine package that are Docker's own (the rest: the Protocols, connect() and
# launcher(), the distribution API client and overlay2's layer format).
DOCKER_MODULES = ("builder.engine.docker_", "builder.engine.buildkit")
# Host setup installs and starts Docker itself (`--docker`): it asks Docker's own module whether it answers.
SETS_UP_DOCKER = ROOT / "builder" / "hostsetup.py"
IMAGE = "stackbuild/reference:8.5.0-910b-debian12-py3.11-x86_64"


def _methods(protocol: type) -> set[str]:
    return {name for name, value in vars(protocol).items() if inspect.isfunction(value) and not name.startswith("_")}


def test_the_engine_protocol_has_at_most_eleven_methods_and_the_layer_store_and_launcher_are_apart() -> None:
    assert len(_methods(Engine)) <= 11, sorted(_methods(Engine))
    assert not _methods(Engine) & _methods(LayerStore)
    assert {"save", "load", "layer_dirs"} <= _methods(LayerStore)
    assert _methods(Launcher) == {"launch_line", "launch"}
    assert not (_methods(Engine) | _methods(LayerStore)) & _methods(Launcher)


def _python_files() -> list[Path]:
    return sorted([*ROOT.glob("builder/**/*.py"), *ROOT.glob("bench/*.py"), *ROOT.glob("tests/**/*.py")])


def test_only_connect_and_launcher_make_the_docker_engine() -> None:
    makers = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                if called in ENGINE_CLASSES and path != MAKER:
                    makers.append(f"{path.relative_to(ROOT)}:{node.lineno} {called}")
    assert not makers, f"make engines with builder.engine.connect() or launcher(): {makers}"


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import names (and the names `from` takes from one, which may be modules)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:  # relative: not a package's absolute name
        return []
    return [node.module or "", *(f"{node.module}.{alias.name}" for alias in node.names)]


def test_outside_the_engine_package_nothing_imports_its_docker_modules() -> None:
    """The rest of builder/ sees the Protocols: an engine's modules are imported by connect() and launcher()."""
    found = []
    for path in sorted((ROOT / "builder").rglob("*.py")):
        if ENGINE_PACKAGE in path.parents or path == SETS_UP_DOCKER:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                docker = [n for n in _imported(node) if n.startswith(DOCKER_MODULES)]
                found += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in docker]
    assert not found, f"use builder.engine's Protocols, connect() and launcher(): {found}"


def _is_docker(program: str) -> bool:
    return program == "docker" or program.endswith("/docker")


def docker_uses(path: Path) -> list[str]:
    """Where a module imports docker-py, or names the docker binary as a program: the first element of
    a list or tuple literal (an argv), or the first argument of a call that starts or finds a program
    (a shell line's first word), given as a string or as a module constant holding one."""
    tree = ast.parse(path.read_text(), str(path))
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }

    def text(node: ast.expr) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return constants.get(node.id) if isinstance(node, ast.Name) else None

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and any(
            m == "docker" or m.startswith("docker.") for m in _imported(node)
        ):
            found.append(f"{node.lineno}: imports docker-py")
        if isinstance(node, ast.List | ast.Tuple) and node.elts and _is_docker(text(node.elts[0]) or ""):
            found.append(f"{node.lineno}: an argv starting with the docker binary")
        if isinstance(node, ast.Call) and ast.unparse(node.func) in PROGRAM_CALLS and node.args:
            words = (text(node.args[0]) or "").split()
            if words and _is_docker(words[0]):
                found.append(f"{node.lineno}: {ast.unparse(node.func)} of the docker binary")
    return found


def test_only_the_engine_package_imports_docker_py_or_runs_the_docker_binary() -> None:
    """A second engine is one module: everything else reaches the engine through its Protocols."""
    outside = [p for p in sorted((ROOT / "builder").rglob("*.py")) if ENGINE_PACKAGE not in p.parents]
    found = [f"{p.relative_to(ROOT)}:{use}" for p in outside for use in docker_uses(p)]
    assert not found, f"ask the engine (builder.engine's Protocols) instead: {found}"


def test_the_docker_scan_finds_each_way_of_naming_the_binary(tmp_path: Path) -> None:
    module = tmp_path / "sneaky.py"
    module.write_text(
        "import os, shutil, subprocess\n"
        "import docker.errors\n"
        "from docker import DockerClient\n"
        "CLIENT = '/usr/bin/docker'\n"
        "line = ('docker', 'run')\n"
        "shutil.which('docker')\n"
        "os.execv(CLIENT, [CLIENT])\n"
        "os.system('docker ps')\n"
        "subprocess.run(['dockerd'])\n"  # the daemon, started by host setup: not the client
        "subprocess.run(['echo', 'docker'])\n"
    )
    assert sorted(int(use.split(":")[0]) for use in docker_uses(module)) == [2, 3, 5, 6, 7, 7, 8]


CHAIN_STEPS = (
    "builder.plan.prepare",
    "builder.plan.make",
    "builder.plan.stage_kinds",
    "builder.plan.platform_stages",
    "builder.plan.component_stages",
    "builder.plan.final_stages",
    "builder.execute.pipeline",
    "builder.execute.scheduler",
    "builder.execute.stage",
    "builder.execute.stage_image",
)


def test_bench_and_the_docker_tier_call_the_chain_not_its_steps() -> None:
    """What import-linter holds the CLI to (pyproject.toml), for bench/ and tests/docker/: they use
    builder.execute.chain and write none of its steps out again."""
    found = []
    for path in sorted([*ROOT.glob("bench/*.py"), *ROOT.glob("tests/docker/*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or "", *(f"{node.module}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            found += [
                f"{path.relative_to(ROOT)}:{node.lineno} {n}"
                for n in names
                if any(n == step or n.startswith(f"{step}.") for step in CHAIN_STEPS)
            ]
    assert not found, f"use builder.execute.chain: {found}"


def test_the_fake_engine_serves_doctor_and_run_and_shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What doctor, run and shell ask of an engine is in the Protocols: the fake, which implements them
    and nothing else, answers doctor's engine check and gives the lines run and shell print and start."""
    fake = FakeEngine()
    engines: tuple[BuildEngine, Launcher] = (fake, fake)  # it meets both Protocols (mypy checks)
    monkeypatch.setattr(Context, "engine", lambda *_: engines[0])
    monkeypatch.setattr(running, "launcher", lambda: engines[1])
    monkeypatch.setenv("STACKBUILD_HOST_ROOT", str(ascend_host(tmp_path / "host", npus=1)))

    code, out, _ = run_cli(capsys, "doctor", "--json")
    engine = next(c for c in json.loads(out)["checks"] if c["name"] == "engine")
    detail = f"Fake 1.0 (API 0.1) on {fake.arch}, memory, the fake's builds"
    assert (engine["verdict"], engine["detail"]) == ("ok", detail)

    code, out, _ = run_cli(capsys, "run", "--print", IMAGE, "--", "id")
    line = shlex.split(out)
    assert code == 0 and line[0] == "fake-run" and line[-2:] == [IMAGE, "id"] and "--device=/dev/davinci0" in line
    with pytest.raises(SystemExit):
        run_cli(capsys, "run", IMAGE, "--", "id")
    assert fake.launched == [line]  # what it prints is what it starts

    monkeypatch.setattr(fake, "image_id", lambda ref: f"sha256:{ref}")  # every stage built
    code, out, _ = run_cli(capsys, "--root", str(ROOT), "shell", "--print", "--arch", "x86_64", "8.5.0", "toolkit")
    line = shlex.split(out)
    assert code == 0 and line[0] == "fake-run" and "--offline" in line  # built without network: run so
    assert "/stage/toolkit:" in line[-2] and line[-1] == "/bin/bash"
