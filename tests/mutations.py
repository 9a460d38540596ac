"""Structured mutations for hypothesis: strings a careless user or an attacker would write (NASTY),
leaves to put anywhere, the paths into a nested value, and edits made along them."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

NASTY = [
    "",
    "\n",
    "a\nRUN evil",
    "--setup-hook=x",
    "../../etc",
    "/etc",
    "x /",
    "$(id)",
    "`id`",
    "\\",
    '"',
    "'",
    "*",
    "\x00",
    "é€",
    "#",
    " ",
]


text = st.one_of(st.sampled_from(NASTY), st.text(max_size=12))
leaf = st.one_of(
    text,
    st.sampled_from([0, -1, 2**70, 1.5, True, False, None, [], {}, [""], {"kind": "env"}]),
    st.lists(text, max_size=2),
)


def leaf_paths(data: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(data, dict):
        for key, value in data.items():
            yield from leaf_paths(value, (*prefix, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from leaf_paths(value, (*prefix, i))


def mutate(data: Any, edits: list[tuple[tuple[Any, ...], str, Any]]) -> Any:
    data = copy.deepcopy(data)
    for path, action, drawn in edits:
        value = copy.deepcopy(drawn)  # one drawn list put in two places must not make the data cyclic
        if not path:
            data = value
            continue
        node = data
        try:
            for part in path[:-1]:
                node = node[part]
            if action == "delete" and isinstance(node, dict):
                node.pop(path[-1], None)
            elif action == "add" and isinstance(node, dict):
                node[str(value)[:20] or "k"] = value
            else:
                node[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue
    return data
