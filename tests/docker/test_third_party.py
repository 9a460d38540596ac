"""A build that downloads its third-party pieces unless they are staged, as asc-devkit's does
(`--cann_3rd_lib_path`), built with no network: its checks satisfied by `fetch:` inputs and the
distribution's makeself, it attempts no download; without the fetch it fails at the download."""

from __future__ import annotations

import io
import tarfile
import uuid
import zipfile
from pathlib import Path

import pytest

from builder.model.arch import Arch
from tests.docker.conftest import stackbuild, write_variant
from tests.helpers import git, http_server, make_repo, serving_bytes

# What asc-devkit v8.5.0's cmake/third_party does with CANN_3RD_LIB_PATH (facts; our own text):
# makeself-fetch.cmake l.15 downloads makeself unless makeself/makeself.sh and makeself-header.sh
# exist there; json.cmake downloads include.zip into pkg/ unless it is there, then extracts it;
# llvm_clang.cmake l.219 downloads the LLVM source unless llvm-15/ exists there.
CMAKE = """cmake_minimum_required(VERSION 3.16)
project(standin NONE)
foreach(needed makeself/makeself.sh makeself/makeself-header.sh pkg/include.zip llvm-15/llvm/CMakeLists.txt)
  if(NOT EXISTS "${CANN_3RD_LIB_PATH}/${needed}")
    message(STATUS "downloading ${needed}")
    file(DOWNLOAD "https://gitcode.com/cann-src-third-party/${needed}" "${CANN_3RD_LIB_PATH}/${needed}" STATUS got)
    list(GET got 0 code)
    if(NOT code EQUAL 0)
      message(FATAL_ERROR "cannot download ${needed}: ${got}")
    endif()
  endif()
endforeach()
file(ARCHIVE_EXTRACT INPUT "${CANN_3RD_LIB_PATH}/pkg/include.zip" DESTINATION "${CMAKE_BINARY_DIR}/json")
"""
# As a stack building asc-devkit v8.5.0 from source unpacks the LLVM source tarball (FetchContent
# would, without its top directory).
STAGE_LLVM = (
    "mkdir -p third_party/llvm-15 && tar -xzf third_party/pkg/llvm.tar.gz --strip-components=1 -C third_party/llvm-15"
)
STAGE_MAKESELF = (
    "mkdir -p third_party/makeself && cp /usr/bin/makeself third_party/makeself/makeself.sh"
    " && cp /usr/share/makeself/makeself-header.sh third_party/makeself/"
)


def _tarball() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        text = b"project(llvm)\n"
        member = tarfile.TarInfo("llvm-project-llvmorg-15.0.4/llvm/CMakeLists.txt")
        member.size = len(text)
        archive.addfile(member, io.BytesIO(text))
    return out.getvalue()


def write_run_id(project: Path) -> None:
    """A file new in every run: the engine's layer cache outlives a run (CI's machine keeps it), and a build
    step it answers leaves no output in the log these tests read."""
    (project / "run-id").write_text(uuid.uuid4().hex)


def _zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("include/nlohmann/json.hpp", "// a stand-in header\n")
    return out.getvalue()


@pytest.mark.parametrize("staged", [True, False], ids=["staged", "not-staged"])
def test_a_third_party_download_is_satisfied_by_what_is_staged(workspace: Path, tmp_path: Path, staged: bool) -> None:
    project = tmp_path / "standin"
    make_repo(project, "standin")
    (project / "CMakeLists.txt").write_text(CMAKE)
    write_run_id(project)
    git("add", "CMakeLists.txt", "run-id", cwd=project)
    git("commit", "-q", "-m", "third-party logic", cwd=project)
    payload, llvm = _zip(), _tarball()
    with http_server(serving_bytes(lambda: payload)) as server, http_server(serving_bytes(lambda: llvm)) as sources:
        fetch = (
            f"    fetch:\n      - {{url: '{server}/include.zip', to: third_party/pkg/include.zip}}\n"
            f"      - {{url: '{sources}/llvm.tar.gz', to: third_party/pkg/llvm.tar.gz}}\n"
        )
        steps = f"      - {STAGE_MAKESELF}\n" + (f"      - {STAGE_LLVM}\n" if staged else "")
        fetch = fetch if staged else ""
        component = (
            "  - id: standin\n"
            f"    source: {{git: 'file://{project}', ref: main}}\n"
            "    system_packages: [makeself]\n"
            f"{fetch}"
            f"    build:\n{steps}      - cmake -S . -B build -DCANN_3RD_LIB_PATH=$PWD/third_party\n"
            "    artifacts: [{path: build/json/include/nlohmann/json.hpp}]\n"
        )
        name = write_variant(
            workspace, f"reftest-3rd-{staged}".lower(), [("components:\n", "components:\n" + component)]
        )
        stackbuild(workspace, "lock", name, check=True)
    run = stackbuild(workspace, "build", name, "--no-smoke")  # the server is gone: only the cache has the file
    log = (workspace / ".stackbuild" / "logs" / name / str(Arch.host()) / "standin.log").read_text()
    if staged:
        assert run.returncode == 0, run.stderr[-3000:]
        assert "downloading" not in log, log[-3000:]
    else:
        assert run.returncode != 0
        assert "cannot download pkg/include.zip" in log, log[-3000:]
        assert "downloading makeself" not in log  # the distribution's makeself satisfies its check


@pytest.mark.parametrize("locked", [True, False], ids=["locked", "not-locked"])
def test_a_build_whose_own_pip_finds_its_locked_requirements_satisfied_needs_no_network(
    workspace: Path, tmp_path: Path, locked: bool
) -> None:
    """As tilelang-ascend's install_ascend.sh does, the build pip-installs an unpinned requirements file;
    its requirements as python_packages (pinned by the lock, installed before the build) leave that pip
    nothing to download, so it passes with no network; without them it fails for want of one."""
    project = tmp_path / "pipping"
    make_repo(project, "pipping")
    (project / "requirements.txt").write_text("simreport\n")
    write_run_id(project)
    git("add", "requirements.txt", "run-id", cwd=project)
    git("commit", "-q", "-m", "requirements", cwd=project)
    python_packages = "    python_packages: [simreport==1.0]\n" if locked else ""
    component = (
        "  - id: pipping\n"
        f"    source: {{git: 'file://{project}', ref: main}}\n"
        f"{python_packages}"
        # Debian 12 marks its Python externally managed (PEP 668); Ubuntu 22.04's does not need the flag.
        "    build:\n      - python3 -m pip install --break-system-packages -r requirements.txt\n"
        "      - python3 -c 'import simreport' && touch built\n"
        "    artifacts: [{path: built}]\n"
    )
    name = write_variant(workspace, f"reftest-pip-{locked}".lower(), [("components:\n", "components:\n" + component)])
    stackbuild(workspace, "lock", name, check=True)
    run = stackbuild(workspace, "build", name, "--no-smoke")
    log = (workspace / ".stackbuild" / "logs" / name / str(Arch.host()) / "pipping.log").read_text()
    if locked:
        assert run.returncode == 0, run.stderr[-3000:]
        assert "Requirement already satisfied: simreport" in log, log[-3000:]
    else:
        assert run.returncode != 0
        assert "No matching distribution found for simreport" in log, log[-3000:]
