"""A failed build's lines with the paths of a component's source named as the user's checkout has
them: the build sees its source where the Dockerfile copied it (`/opt/stack/<component>/`), the user
edits the tree the manifest points at. Only files that are in that tree are renamed; what the build
made there (objects, generated headers) has no place in the checkout and keeps its path."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from builder.inputs.contexts import LocalTree
from builder.model.layout import stack_dir
from builder.plan.plan_model import Stage

SOURCE_PREFIX = "src/"  # where a component's source is in its stage's context (path_source, git_source)


def _tree(stage: Stage) -> Path | None:
    """The local tree the stage's source was copied from; None for a git source (no checkout of the user's)."""
    trees = [item.root for item in stage.context if isinstance(item, LocalTree) and item.prefix == SOURCE_PREFIX]
    return trees[0] if trees else None


def in_checkout(lines: Sequence[str], stage: Stage) -> list[str]:
    """lines, each path inside the stage's copy of a local source named by the file it came from."""
    tree = _tree(stage)
    if tree is None:
        return list(lines)
    inside = re.compile(re.escape(stack_dir(stage.name) + "/") + r"([\w.+-]+(?:/[\w.+-]+)*)")

    def named(found: re.Match[str]) -> str:
        relative = Path(found.group(1))
        source = tree / relative
        return str(source) if ".." not in relative.parts and source.is_file() else found.group(0)

    return [inside.sub(named, line) for line in lines]
