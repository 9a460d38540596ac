"""The component graph: order, cycles, transitive dependencies."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence


def topological_order(graph: Mapping[str, Sequence[str]]) -> list[str]:
    """Nodes so that each comes after what it depends on (ties kept in the mapping's order)."""
    pending = {node: list(deps) for node, deps in graph.items()}
    order: list[str] = []
    while pending:
        ready = [node for node, deps in pending.items() if all(d in order for d in deps)]
        if not ready:
            raise ValueError("dependency cycle")  # validation reports cycles first, with the path
        order.append(ready[0])
        del pending[ready[0]]
    return order


def find_cycle(graph: Mapping[str, Sequence[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in graph.get(node, []):
            if state.get(dep) == 1:
                return [*stack[stack.index(dep) :], dep]
            if dep not in state and (cycle := visit(dep)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in graph:
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def transitive_deps(graph: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Every node each one needs (directly or not), in topological order."""
    order = topological_order(graph)
    closure: dict[str, set[str]] = {}
    for node in order:
        closure[node] = set(graph[node]).union(*(closure[d] for d in graph[node]))
    return {node: [d for d in order if d in closure[node]] for node in order}


def suggest(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
