"""Broken variants of the reference stack: each probe kind fails its stage, named and explained."""

from __future__ import annotations

import hashlib
import http.server
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
import zipfile
from pathlib import Path
from typing import IO

import pytest

from builder.model.arch import Arch
from tests.conftest import ROOT
from tests.docker.conftest import stackbuild, write_variant
from tests.helpers import http_server

RUNTIME_STEPS = """      - cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
      - cmake --build build"""


def build_variant(root: Path, name: str, replacements: list[tuple[str, str]]) -> subprocess.CompletedProcess[str]:
    write_variant(root, name, replacements)
    stackbuild(root, "lock", name, check=True)
    return stackbuild(root, "build", name, "--no-smoke")


def test_empty_kernel_metadata_fails_elf_section_probe(workspace: Path) -> None:
    run = build_variant(
        workspace,
        "reftest-emptymeta",
        [
            (
                "    build: [make]\n    env:\n      ASCEND_KERNEL_LIB",
                "    build:\n      - make\n      - objcopy --remove-section __kernel_info build/gemm_f32.o\n"
                "      - objcopy --add-section __kernel_info=/dev/null build/gemm_f32.o\n"
                "    env:\n      ASCEND_KERNEL_LIB",
            )
        ],
    )
    assert run.returncode == 1
    assert (
        "stage ascend-kernel failed: probe elf-section __kernel_info in build/gemm_f32.o failed: "
        "__kernel_info is empty in build/gemm_f32.o"
    ) in run.stderr
    assert "likely cause: kernel compiled by a wrong or missing compiler path" in run.stderr
    assert "[stackbuild] harness: skipped" in run.stderr


def test_acl_copy_outside_toolkit_fails_linked_from_probe(workspace: Path) -> None:
    run = build_variant(
        workspace,
        "reftest-strayacl",
        [
            (
                RUNTIME_STEPS,
                (
                    "      - mkdir -p /opt/old-acl && cp -r $ASCEND_TOOLKIT_HOME/include $ASCEND_TOOLKIT_HOME/lib64"
                    " /opt/old-acl/\n"
                    "      - cmake -S . -B build -DACL_DIR=/opt/old-acl/lib64/cmake"
                    " -DCMAKE_SHARED_LINKER_FLAGS=-Wl,--disable-new-dtags\n"
                    "      - cmake --build build"
                ),
            )
        ],
    )
    assert run.returncode == 1
    assert (
        "stage runtime failed: probe linked-from build/libascend_runtime.so within /usr/local/Ascend/cann-8.5.0 "
        "failed: build/libascend_runtime.so resolves libascendcl.so to /opt/old-acl/lib64/libascendcl.so, "
        "outside /usr/local/Ascend/cann-8.5.0"
    ) in run.stderr
    assert "likely cause: the runtime is linked against an ACL outside the pinned toolkit" in run.stderr


def test_unset_env_fails_env_probe(workspace: Path) -> None:
    run = build_variant(
        workspace, "reftest-noenv", [("    env:\n      ASCEND_C_INCLUDE: ${ASCEND_HOME_PATH}/ascendc/include\n", "")]
    )
    assert run.returncode == 1
    assert (
        "stage tilelang-compiler failed: probe env ASCEND_HOME_PATH ASCEND_C_INCLUDE failed: "
        "ASCEND_C_INCLUDE is not set"
    ) in run.stderr


def test_a_python_install_that_is_dropped_fails_the_imports_probe(workspace: Path) -> None:
    """tilelang installed somewhere no python3 looks: its stage fails naming the module (its source
    tree, the probe's working directory, does not count)."""
    run = build_variant(
        workspace,
        "reftest-noimport",
        [("--no-index --break-system-packages .\n", "--no-index --target /tmp/dropped .\n")],
    )
    assert run.returncode == 1
    assert (
        "stage tilelang failed: probe imports tilelang failed: cannot import tilelang: "
        "ModuleNotFoundError: No module named 'tilelang'"
    ) in run.stderr


def test_failing_command_probe_and_build_step(workspace: Path) -> None:
    run = build_variant(workspace, "reftest-badcmd", [('expect: \'"kernel": "matmul"\'', "expect: 'no such output'")])
    assert run.returncode == 1
    assert (
        "stage tilelang failed: probe command python3 -m tilelang examples/matmul.tl failed: output does not match"
        in run.stderr
    )
    run = build_variant(
        workspace,
        "reftest-badstep",
        [
            (
                "      - cmake -S . -B build -DCMAKE_BUILD_TYPE=Release",
                "      - env -u CMAKE_PREFIX_PATH cmake -S . -B build",
            )
        ],
    )
    assert run.returncode == 1
    # The headline is the user's step and its tool's words, not the script stackbuild ran it from.
    assert (
        "stage runtime failed: build step 1/2: env -u CMAKE_PREFIX_PATH cmake -S . -B build failed (exit code 1): "
        'CMake Error at CMakeLists.txt:7 (find_package): Could not find a package configuration file provided by "ACL"'
    ) in run.stderr
    headline = next(line for line in run.stderr.splitlines() if "stage runtime failed" in line)
    assert "/opt/stackbuild/steps/runtime/build.sh" not in headline
    # From the log tail: the failing step by number and first line, and the tool's own message.
    assert "stackbuild: runtime: build step 1/2: env -u CMAKE_PREFIX_PATH cmake -S . -B build" in run.stderr
    assert 'Add the installation prefix of "ACL" to CMAKE_PREFIX_PATH' in run.stderr
    assert "full log: " in run.stderr
    assert "likely cause: CMAKE_PREFIX_PATH lacks the toolkit's lib64/cmake" in run.stderr


def test_a_compile_error_names_the_source_file_where_the_user_edits_it(workspace: Path) -> None:
    """The compiler sees the copy under /opt/stack/runtime/; the headline and the log tail name the
    checkout's file (issue 55: error lines named the path inside the container)."""
    source = workspace / "stacks" / "reference" / "runtime" / "src" / "runtime.c"
    old = source.read_text()
    source.write_text(old + "\nint stackbuild_broken(void) { return stackbuild_undeclared; }\n")
    try:
        run = stackbuild(workspace, "build", "reftest", "--no-smoke")
    finally:
        source.write_text(old)
    assert run.returncode == 1, run.stderr[-3000:]
    headline = next(line for line in run.stderr.splitlines() if "stage runtime failed" in line)
    assert f"{source}:" in headline and "stackbuild_undeclared" in headline, headline
    assert "/opt/stack/runtime/src/runtime.c" not in run.stderr


def test_build_steps_are_scripts_comments_and_lines_are_harmless(workspace: Path) -> None:
    """A trailing shell comment no longer hides later steps or the artifact checks; a multi-line script runs."""
    run = build_variant(
        workspace,
        "reftest-comment",
        [
            (
                "    build: [make]\n    env:\n      ASCEND_KERNEL_LIB",
                "    build:\n      - make  # compile\n"
                "      - |\n        echo first line\n        rm build/libascend_kernel.so\n"
                "    env:\n      ASCEND_KERNEL_LIB",
            )
        ],
    )
    assert run.returncode == 1
    assert "stackbuild: ascend-kernel did not produce the artifact build/libascend_kernel.so" in run.stderr
    log = (workspace / ".stackbuild" / "logs" / "reftest-comment" / str(Arch.host()) / "ascend-kernel.log").read_text()
    assert "stackbuild: ascend-kernel: step 2/2: echo first line ..." in log and "\nfirst line\n" in log


def wait_for_line(stream: IO[str], prefix: str, seconds: float) -> bool:
    """Whether a line starting with prefix arrives within seconds (a reader thread, so a silent
    process cannot hold the test past its deadline)."""
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            return False
        if line is None:
            return False
        if line.startswith(prefix):
            return True
    return False


def test_killed_builder_never_reuses_the_interrupted_stage(workspace: Path) -> None:
    pip = "      - python3 -m pip install --quiet --no-cache-dir --no-deps --no-build-isolation --no-index"
    pip += " --target python .\n"
    harness_env = "    env:\n      PYTHONPATH: /opt/stack/harness"
    name = write_variant(
        workspace,
        "reftest-slow",
        [(pip + harness_env, f"      - sleep 20 && echo {uuid.uuid4().hex}\n" + pip + harness_env)],
    )
    stackbuild(workspace, "lock", name, check=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "builder", "--root", str(workspace), "build", name, "--no-smoke"],
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert proc.stderr is not None
    try:
        started = wait_for_line(proc.stderr, "[stackbuild] harness: building", seconds=600)
        assert started, "the harness stage did not start building within 600 s"
        time.sleep(5)  # inside the harness stage's `sleep 20`
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    plan = stackbuild(workspace, "plan", name, check=True).stdout
    assert next(line for line in plan.splitlines() if line.startswith("harness ")).split()[1] == "build"
    rerun = stackbuild(workspace, "build", name, "--no-smoke")
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert "[stackbuild] harness: built" in rerun.stderr
    assert "[stackbuild] runtime-image: built" in rerun.stderr


def _x86_64_package() -> str:
    """The reference manifest's x86_64 toolkit package entry (its file and generate command)."""
    text = (ROOT / "stacks" / "reference.yaml").read_text()
    start = text.index("      x86_64:\n        file: ")
    return text[start : text.index("      aarch64:\n", start)]


def _ops_packages() -> str:
    """The reference manifest's ops packages (a toolkit of another version would refuse them)."""
    text = (ROOT / "stacks" / "reference.yaml").read_text()
    start = text.index("    # The operator package")
    return text[start : text.index("host:\n", start)]


@pytest.mark.parametrize("bad", [False, True], ids=["matching", "version-mismatch"])
def test_real_cann_packages_from_loopback_http(workspace: Path, tmp_path: Path, bad: bool) -> None:
    """The reference toolkit under CANN's real file name, signed and wrapped as the catalog's zips are
    (by the test CA, which the site configuration trusts for a private mirror), served over HTTP."""
    arch = "x86_64"
    real_name = f"Ascend-cann-toolkit_8.5.0_linux-{arch}"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "stacks" / "reference" / "toolkit" / "pack.py"),
            "--arch",
            arch,
            "--package-name",
            "Ascend-cann-toolkit",
            "--version",
            "9.0.0" if bad else "8.5.0",
            "--output-dir",
            str(tmp_path),
            "--output-name",
            f"{real_name}.run",
            # Other bytes each run, as each of Huawei's builds has: BuildKit's cache of an earlier
            # run's install step (kept by the daemon across runs) never stands in for this one.
            "--timestamp",
            time.strftime("%Y%m%d_%H%M%S") + f"{time.time_ns() // 1_000_000 % 1000:03d}",
        ],
        check=True,
        capture_output=True,
    )
    sign = ROOT / "stacks" / "reference" / "toolkit" / "sign.py"
    run_file = str(tmp_path / f"{real_name}.run")
    subprocess.run([sys.executable, str(sign), "--run", run_file, "--output-dir", str(tmp_path)], check=True)
    archive = tmp_path / f"{real_name}.zip"
    with zipfile.ZipFile(archive, "a") as zf:
        # A new archive each run, so the download really happens (the cache is content-addressed).
        zf.comment = uuid.uuid4().hex.encode()
    site = tmp_path / "site.yaml"
    site.write_text(f"trusted_cas: [{ROOT / 'stacks' / 'reference' / 'toolkit' / 'test-ca' / 'ca.pem'}]\n")
    payload = archive.read_bytes()
    sha = hashlib.sha256(payload).hexdigest()
    served: list[str] = []

    def get(handler: http.server.BaseHTTPRequestHandler) -> None:
        served.append(handler.command)
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        if handler.command == "GET":
            handler.wfile.write(payload)

    with http_server(get) as url:
        name = f"reftest-cann-{'bad' if bad else 'ok'}"
        write_variant(
            workspace,
            name,
            [
                ("  vendor: cpusim", "  vendor: huawei"),
                ("  trust: [reference/toolkit/test-ca/ca.pem]\n", ""),
                (_ops_packages(), ""),
                (
                    _x86_64_package(),
                    f"""      x86_64:
        file: {real_name}.zip
        url: {url}/CANN/CANN%208.5.0/{real_name}.zip
        sha256: "{sha}"
""",
                ),
                ("  driver: none", "  driver: 25.5.0"),
            ],
        )
        on_site = ("--site-config", str(site))
        locked = stackbuild(workspace, *on_site, "lock", name, "--allow-unsupported", "--arch", arch)
        assert locked.returncode == 0, locked.stderr
        assert "toolkit package for x86_64 differs from the catalog" in locked.stderr
        run = stackbuild(workspace, *on_site, "build", name, "--no-smoke")
    assert "GET" in served
    log = (workspace / ".stackbuild" / "logs" / name / arch / "toolkit.log").read_text()
    if not bad:
        assert run.returncode == 0, run.stderr[-3000:]
        assert "[Toolkit] [INFO] installing Ascend-cann-toolkit 8.5.0" in log
        assert "--install --quiet --install-for-all" in log
    else:
        assert run.returncode == 1
        assert (
            "stackbuild: toolkit version mismatch: the lock pins 8.5.0 but the installed package reports '9.0.0'"
        ) in run.stderr
        assert "stage toolkit failed" in run.stderr
        assert "likely cause: the package installed a different CANN version than the lock pins" in run.stderr


def test_base_python_other_than_the_platforms_fails_the_base_stage(workspace: Path) -> None:
    run = build_variant(workspace, "reftest-py310", [('  python: "3.11"', '  python: "3.10"')])
    assert run.returncode == 1
    assert re.search(
        r"stage base-(devel|runtime) failed: probe command python3 --version failed: output does not", run.stderr
    )
