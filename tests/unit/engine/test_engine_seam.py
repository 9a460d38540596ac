"""The engine seam stays small (an Engine of at most ten methods, normalising's store access apart,
the Docker engine made in one place only: builder.engine.connect), and bench/ and the docker tier
call the build chain rather than its steps."""

from __future__ import annotations

import ast
import inspect

from builder.engine import Engine, LayerStore
from tests.conftest import ROOT

MAKER = ROOT / "builder" / "engine" / "__init__.py"


def _methods(protocol: type) -> set[str]:
    return {name for name, value in vars(protocol).items() if inspect.isfunction(value) and not name.startswith("_")}


def test_the_engine_protocol_has_at_most_ten_methods_and_the_layer_store_is_apart() -> None:
    assert len(_methods(Engine)) <= 10, sorted(_methods(Engine))
    assert not _methods(Engine) & _methods(LayerStore)
    assert {"save", "load", "layer_dirs"} <= _methods(LayerStore)


def test_only_connect_makes_a_docker_engine() -> None:
    makers = []
    for path in sorted([*ROOT.glob("builder/**/*.py"), *ROOT.glob("bench/*.py"), *ROOT.glob("tests/**/*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                if called == "DockerEngine" and path != MAKER:
                    makers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not makers, f"make engines with builder.engine.connect(): {makers}"


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
