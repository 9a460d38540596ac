"""A failed build names a component's source file where the user edits it (issue 55 item 5): the
stage's copy under /opt/stack/<component>/ mapped back to the local tree it came from."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from builder.execute.checkout_paths import in_checkout
from builder.inputs.contexts import LocalTree
from tests.golden_plan import golden_plan


def test_a_source_files_path_is_the_checkouts_and_a_built_files_stays(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "acl.c").write_text("int x;\n")
    stage = dataclasses.replace(golden_plan().stages["kernels"], context=(LocalTree("src/", tmp_path),))
    lines = [
        "/opt/stack/kernels/src/acl.c:3:5: error: 'y' undeclared",
        "make: *** [/opt/stack/kernels/build/acl.o] Error 1",  # made by the build: not in the checkout
        "/opt/stack/kernels/../../etc/passwd:1: error",  # not a file of the tree, whatever it names
        "/opt/stack/devkit/src/acl.c:1: another component's copy",
    ]
    assert in_checkout(lines, stage) == [f"{tmp_path}/src/acl.c:3:5: error: 'y' undeclared", *lines[1:]]


def test_a_git_sources_paths_stay_as_the_build_saw_them() -> None:
    stage = golden_plan().stages["kernels"]  # its source is a commit: no checkout of the user's to name
    lines = ["/opt/stack/kernels/src/acl.c:3:5: error: 'y' undeclared"]
    assert in_checkout(lines, stage) == lines
