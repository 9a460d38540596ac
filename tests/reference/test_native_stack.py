"""The six layers built natively, in dependency order, and the failures between them."""

import os
import subprocess
import sys
from pathlib import Path

from builder.verify.diagnose import diagnose
from tests.conftest import REFERENCE

LAUNCH = [
    sys.executable,
    "-m",
    "harness.debug.launch_kernel",
    "--grid-dim",
    "1,1,1",
    "--block-dim",
    "16,16,1",
    "--shared-mem",
    "0",
]


def launch(env: dict[str, str], *args: str, kernel: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LAUNCH, "--kernel-path", kernel or env["ASCEND_KERNEL_LIB"], *args], env=env, capture_output=True, text=True
    )


def section(obj: Path, name: str, tmp: Path) -> dict[str, str]:
    out = tmp / name
    subprocess.run(["objcopy", "--dump-section", f"{name}={out}", str(obj), str(tmp / "scratch.o")], check=True)
    records = [r for r in out.read_bytes().split(b"\0") if r]
    assert len(records) == 1
    return dict(line.split("=", 1) for line in records[0].decode().splitlines())


def test_smoke_matmul_256(native_stack: dict[str, str]) -> None:
    result = launch(native_stack, "--args", "float32,M,N,K,lda,ldb,ldc")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("[INFO] Kernel launch success! Elapsed time: ")
    max_error = float(lines[1].split()[3])
    assert max_error <= 1e-3
    assert "M=256 N=256 K=256" in lines[1]


def test_many_blocks_odd_sizes(native_stack: dict[str, str]) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.debug.launch_kernel",
            "--kernel-path",
            native_stack["ASCEND_KERNEL_LIB"],
            "--grid-dim",
            "3,2,1",
            "--block-dim",
            "8,4,1",
            "--m",
            "50",
            "--n",
            "33",
            "--k",
            "70",
        ],
        env=native_stack,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert float(result.stdout.splitlines()[1].split()[3]) <= 1e-3


def test_metadata_sections_in_kernel_object(native_stack: dict[str, str], tmp_path: Path) -> None:
    obj = Path(native_stack["STACK_PREFIX"]) / "src" / "ascend-kernel" / "build" / "gemm_f32.o"
    headers = subprocess.run(["readelf", "-S", "-W", str(obj)], capture_output=True, text=True, check=True).stdout
    assert "__kernel_info" in headers and "__tile_config" in headers
    info = section(obj, "__kernel_info", tmp_path)
    assert info["name"] == "gemm_f32"
    assert info["args"].split(",") == ["float32*"] * 3 + ["int32"] * 6
    assert info["block_dim"] == "16,16,1"
    assert info["entry"] == "__ascend_entry_gemm_f32"
    assert info["compiler"] == "ascendcc 8.5.0"
    tile = section(obj, "__tile_config", tmp_path)
    assert tile == {"kernel": "gemm_f32", "tiling": "i=16,j=16,k=32", "memory": "A=L1,B=L1,C=DDR", "target": "910b"}


def test_wrong_argument_count_is_invalid_param(native_stack: dict[str, str]) -> None:
    result = launch(native_stack, "--args", "float32,M,N,K,lda,ldb")
    assert result.returncode != 0
    assert "ACL_ERROR_INVALID_PARAM (100000): kernel gemm_f32 expects 9 arguments" in result.stderr
    assert "got 8" in result.stderr


def test_block_dim_zero_is_rt_param_invalid(native_stack: dict[str, str]) -> None:
    result = subprocess.run(
        [*LAUNCH[:-4], "--block-dim", "16,0,1", "--kernel-path", native_stack["ASCEND_KERNEL_LIB"]],
        env=native_stack,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "ACL_ERROR_RT_PARAM_INVALID (107000)" in result.stderr and "block dim 16,0,1 has a 0" in result.stderr


def test_kernel_built_by_plain_cc_is_rejected(native_stack: dict[str, str], tmp_path: Path) -> None:
    src = tmp_path / "k.c"
    src.write_text("void gemm_f32(void) {}\n")
    lib = tmp_path / "libplain.so"
    subprocess.run(["cc", "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
    result = launch(native_stack, kernel=str(lib))
    assert result.returncode != 0
    assert "ACL_ERROR_INVALID_FILE (100003)" in result.stderr and "no __kernel_info section" in result.stderr


def test_harness_without_runtime_env(native_stack: dict[str, str]) -> None:
    env = {k: v for k, v in native_stack.items() if k != "ASCEND_RUNTIME_LIB"}
    result = launch(env)
    assert result.returncode != 0 and "ASCEND_RUNTIME_LIB is not set" in result.stderr


def resolved(library: str, needed: str) -> str:
    """Where the dynamic linker finds needed for library with no environment: through its run path."""
    ldd = subprocess.run(
        ["ldd", library], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, check=True
    ).stdout
    return next(line for line in ldd.splitlines() if needed in line).split("=>")[1].strip()


def test_kernel_library_resolves_ascend_c_inside_the_toolkit(native_stack: dict[str, str]) -> None:
    """The Ascend C library comes with the toolkit (as CANN ships asc-devkit): the kernel library finds
    it in the toolkit's lib64."""
    found = resolved(native_stack["ASCEND_KERNEL_LIB"], "libascendc.so")
    assert found.startswith(f"{native_stack['ASCEND_HOME_PATH']}/lib64/libascendc.so")


def test_runtime_resolves_acl_inside_the_toolkit(native_stack: dict[str, str]) -> None:
    assert resolved(native_stack["ASCEND_RUNTIME_LIB"], "libascendcl.so").startswith(
        native_stack["ASCEND_TOOLKIT_HOME"]
    )


def make(path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "-C", str(path), *args], env=env, capture_output=True, text=True)


def test_out_of_order_and_wrong_toolkit_fail_loudly(native_stack: dict[str, str], tmp_path: Path) -> None:
    bare = {"PATH": os.environ["PATH"]}
    kernels = REFERENCE / "ascend-kernel"
    assert "ASCEND_HOME_PATH is not set: install the toolkit and source" in make(kernels, bare, "-n").stderr
    # A toolkit without the Ascend C devkit (CANN's toolkit has it: so has the reference's).
    without = make(kernels, {**native_stack, "ASCEND_HOME_PATH": str(tmp_path)}, "-n")
    assert without.returncode != 0
    assert f"no Ascend C devkit: {tmp_path}/ascendc/include/ascendc/kernel_operator.h is missing" in without.stderr
    assert "CANN ships it inside the toolkit package" in (diagnose(without.stderr.splitlines()) or "")
    assert make(kernels, native_stack, "-n").returncode == 0
    cmake = subprocess.run(
        ["cmake", "-S", str(REFERENCE / "runtime"), "-B", str(tmp_path / "b")], env=bare, capture_output=True, text=True
    )
    # Without set_env.sh, CMAKE_PREFIX_PATH lacks the toolkit's lib64/cmake: CMake names the variable.
    assert cmake.returncode != 0 and 'Add the installation prefix of "ACL" to CMAKE_PREFIX_PATH' in cmake.stderr


def test_result_mismatch_exits_non_zero(native_stack: dict[str, str]) -> None:
    # float32 accumulation is never exact against the float64 reference: a zero tolerance fails.
    result = launch(native_stack, "--tolerance", "0")
    assert result.returncode == 1
    assert "[INFO] Kernel launch success!" in result.stdout
    assert "[ERROR] Result mismatch: max error" in result.stderr
