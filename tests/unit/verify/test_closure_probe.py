"""The runtime image's closure probe on real ELF files built here: the loader's word on each (ldd), in
batches, a file ldd cannot take skipped, the driver's libraries allowed to be missing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from builder.verify import probe_runner


def _built(tmp_path: Path) -> Path:
    (tmp_path / "y.c").write_text("int f(void) { return 1; }\n")
    (tmp_path / "x.c").write_text("int f(void);\nint g(void) { return f(); }\n")
    (tmp_path / "m.c").write_text("int main(void) { return 0; }\n")
    tree = tmp_path / "tree"
    (tree / "lib").mkdir(parents=True)
    cc = ["cc", "-shared", "-fPIC"]
    subprocess.run([*cc, str(tmp_path / "y.c"), "-o", str(tmp_path / "liby.so")], check=True)
    libx = str(tree / "lib" / "libx.so")
    subprocess.run([*cc, str(tmp_path / "x.c"), "-o", libx, f"-L{tmp_path}", "-ly"], check=True)
    subprocess.run(["cc", str(tmp_path / "m.c"), "-o", str(tree / "prog")], check=True)
    (tree / "notes.txt").write_text("not an ELF file\n")
    (tree / "lib" / "libx.so.1").symlink_to("libx.so")
    return tree


@pytest.mark.parametrize("batch", [1, 256])
def test_a_library_nothing_provides_is_named_with_who_needs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    if shutil.which("cc") is None or shutil.which("ldd") is None:
        pytest.fail("cc and ldd are needed (the host setup step installs the build tools)")
    tree = _built(tmp_path)
    monkeypatch.setattr(probe_runner, "LDD_BATCH", batch)
    ok, message = probe_runner.closure({"roots": [str(tree)], "provided": []})
    assert not ok and message == f"liby.so not found (needed by {tree / 'lib' / 'libx.so'})"
    ok, message = probe_runner.closure({"roots": [str(tree)], "provided": ["liby.so"]})
    assert ok and message == "2 ELF files, each library they need found; left to the host's driver: liby.so"
