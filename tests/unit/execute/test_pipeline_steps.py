"""Where a new pipeline step goes (docs/architecture.md): a function in builder/execute/ taking the
previous step's value and returning its own, so the steps chain by their types alone. The build's
steps, in the order chain.build calls them, each take what the one before returns."""

from __future__ import annotations

import ast
import inspect
import typing

from builder.execute import chain, pipeline, provenance
from builder.plan.plan_model import Plan

# The build's steps after planning, in chain.build's order.
STEPS = (pipeline.find_cached, pipeline.execute, pipeline.tag_finals, provenance.provenance)


def test_each_step_takes_the_value_the_step_before_it_returns() -> None:
    given: object = Plan
    for step in STEPS:
        hints = typing.get_type_hints(step)
        first = next(iter(inspect.signature(step).parameters))
        assert hints[first] is given, f"{step.__name__} takes {hints[first]}, the step before returns {given}"
        given = hints["return"]
    assert typing.get_type_hints(pipeline.smoke)["tagged"] is pipeline.Tagged  # the smoke takes the tagged finals


class _Calls(ast.NodeVisitor):
    """Names called, in the order they run: a call's arguments before the call itself."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name):
            self.names.append(node.func.id)


def test_chain_build_calls_the_steps_in_that_order() -> None:
    calls = _Calls()
    calls.visit(ast.parse(inspect.getsource(chain.build)))
    called = calls.names
    order = [name for name in called if name in {step.__name__ for step in STEPS}]
    assert order == [step.__name__ for step in STEPS]
