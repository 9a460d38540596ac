import subprocess
import sys
from pathlib import Path

import pytest
from tilelang_compiler import CompileError, compile_file

from tests.conftest import REFERENCE

MATMUL = REFERENCE / "tilelang" / "examples" / "matmul.tl"
# The Ascend C headers as the toolkit package holds them (it installs them as <toolkit>/ascendc/include).
INCLUDE = str(REFERENCE / "toolkit" / "payload" / "asc-devkit" / "include")


def write_tl(tmp_path: Path, tiling: str, memory: str = "{A: L1, B: L1, C: DDR}") -> Path:
    text = MATMUL.read_text().replace("{i: 16, j: 16, k: 32}", tiling).replace("{A: L1, B: L1, C: DDR}", memory)
    path = tmp_path / "matmul.tl"
    path.write_text(text)
    return path


def test_generates_tiled_kernel(tmp_path: Path) -> None:
    out = compile_file(MATMUL, tmp_path / "gemm_f32.ac", include_dir=INCLUDE)
    code = out.read_text()
    assert '#include "ascendc/kernel_operator.h"' in code
    assert '#pragma ascendc tile_config("i=16,j=16,k=32")' in code
    assert "#pragma ascendc block_dim(16, 16, 1)" in code
    assert "__global__ __aicore__ void gemm_f32(" in code
    assert code.count("ascendc_copy_in(") == 2


def test_l1_overflow_is_rejected(tmp_path: Path) -> None:
    source = write_tl(tmp_path, "{i: 16, j: 16, k: 8192}")
    with pytest.raises(CompileError, match=r"needs 1048576 bytes of L1 .* target 910b has 524288: use smaller tiles"):
        compile_file(source, tmp_path / "gemm_f32.ac", include_dir=INCLUDE)
    assert not (tmp_path / "gemm_f32.ac").exists()
    # The same tiling fits when the tiles stay in DDR, and on a target with a larger L1.
    compile_file(
        write_tl(tmp_path, "{i: 16, j: 16, k: 8192}", "{A: DDR, B: DDR, C: DDR}"),
        tmp_path / "ddr.ac",
        include_dir=INCLUDE,
    )
    compile_file(source, tmp_path / "big.ac", target_name="310p", include_dir=INCLUDE)


def test_cli_reports_overflow_and_missing_headers(tmp_path: Path) -> None:
    source = write_tl(tmp_path, "{i: 256, j: 16, k: 1024}")
    cmd = [sys.executable, "-m", "tilelang_compiler", "-i", str(source), "-o", str(tmp_path / "k.ac")]
    paths = f"{REFERENCE / 'tilelang'}:{REFERENCE / 'tilelang-compiler'}"
    run = subprocess.run(
        cmd,
        env={"PYTHONPATH": paths, "ASCEND_C_INCLUDE": INCLUDE, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1
    assert "tilelang-compiler: error: tiling {i: 256, j: 16, k: 1024} needs 1114112 bytes of L1" in run.stderr
    run = subprocess.run(cmd, env={"PYTHONPATH": paths, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert run.returncode == 1
    assert "neither ASCEND_C_INCLUDE nor ASCEND_HOME_PATH is set: source the toolkit's set_env.sh" in run.stderr
    toolkit = tmp_path / "toolkit-without-devkit"
    toolkit.mkdir()
    env = {"PYTHONPATH": paths, "PATH": "/usr/bin:/bin", "ASCEND_HOME_PATH": str(toolkit)}
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert run.returncode == 1
    assert f"{toolkit}/ascendc/include has no ascendc/kernel_operator.h: no Ascend C devkit there" in run.stderr


def test_the_headers_are_found_in_the_toolkit_from_ascend_home_path(tmp_path: Path) -> None:
    """The Ascend C devkit comes inside the toolkit (as CANN ships asc-devkit): without ASCEND_C_INCLUDE
    the compiler takes $ASCEND_HOME_PATH/ascendc/include, which set_env.sh's ASCEND_HOME_PATH gives;
    ASCEND_C_INCLUDE, when set, wins."""
    toolkit = tmp_path / "toolkit"
    (toolkit / "ascendc").mkdir(parents=True)
    (toolkit / "ascendc" / "include").symlink_to(INCLUDE)
    paths = f"{REFERENCE / 'tilelang'}:{REFERENCE / 'tilelang-compiler'}"
    cmd = [sys.executable, "-m", "tilelang_compiler", "-i", str(MATMUL), "-o", str(tmp_path / "gemm_f32.ac")]
    env = {"PYTHONPATH": paths, "PATH": "/usr/bin:/bin", "ASCEND_HOME_PATH": str(toolkit)}
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert '#include "ascendc/kernel_operator.h"' in (tmp_path / "gemm_f32.ac").read_text()
    elsewhere = {**env, "ASCEND_C_INCLUDE": str(tmp_path / "nowhere")}
    run = subprocess.run(cmd, env=elsewhere, capture_output=True, text=True)
    assert run.returncode == 1 and f"{tmp_path / 'nowhere'} has no ascendc/kernel_operator.h" in run.stderr


def test_unknown_target_and_unsupported_kernel(tmp_path: Path) -> None:
    with pytest.raises(CompileError, match=r"unknown target '920x' \(known: 310p, 910b\)"):
        compile_file(MATMUL, tmp_path / "k.ac", target_name="920x", include_dir=INCLUDE)
    odd = tmp_path / "add.tl"
    odd.write_text("def add(A: [M, N], B: [M, N]) -> C: [M, N] {\n  C[i, j] = A[i, j] + B[i, j]\n}\n")
    with pytest.raises(CompileError, match="only C\\[i, j\\] \\+= A\\[i, k\\] \\* B\\[k, j\\] contractions"):
        compile_file(odd, tmp_path / "add.ac", include_dir=INCLUDE)
