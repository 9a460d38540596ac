"""A build context written as a directory gives COPY the same modes whatever the umask it is written under."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from builder.inputs.contexts import LocalTree, write_context
from builder.store.cache import Cache


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
