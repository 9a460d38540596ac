"""Writing a build context: as a directory it gives COPY the same modes whatever the umask it is written
under, and a tree edited after planning is not sent under the planned key."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from builder.inputs.contexts import LocalTree, write_context
from builder.inputs.trees import tree_hash
from builder.model.errors import StackbuildError
from builder.store.cache import Cache
from tests.helpers import context_files


def test_the_directories_a_tree_implies_have_one_mode_under_any_umask(tmp_path: Path) -> None:
    source = tmp_path / "source"
    (source / "include" / "deep").mkdir(parents=True)
    (source / "include" / "deep" / "h.h").write_text("int x;\n")
    (source / "run.sh").write_text("true\n")
    (source / "run.sh").chmod(0o755)
    modes = []
    for umask in (0o022, 0o077, 0o002):
        previous = os.umask(umask)
        try:
            context = tmp_path / f"context-{umask:o}"
            context.mkdir()
            write_context(context, "FROM scratch\n", [LocalTree("src/", source)], Cache(tmp_path / "cache"))
        finally:
            os.umask(previous)
        modes.append(
            {
                path.relative_to(context).as_posix(): stat.S_IMODE(path.stat().st_mode)
                for path in [context, *sorted(context.rglob("*"))]
            }
        )
    assert modes[0] == modes[1] == modes[2]
    assert modes[0]["src/include/deep"] == 0o755 and modes[0]["."] == 0o755 and modes[0]["src/run.sh"] == 0o755


def test_a_tree_edited_after_planning_is_not_sent_under_the_planned_key(tmp_path: Path) -> None:
    root = tmp_path / "app"
    root.mkdir()
    (root / "main.c").write_text("v1\n")
    planned = tree_hash(root)
    (root / "main.c").write_text("v2\n")
    with pytest.raises(StackbuildError, match="changed while the build was running"):
        context_files("FROM scratch\n", [LocalTree("src/", root, planned)], Cache(tmp_path / "c"))
