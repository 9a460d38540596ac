"""Choosing a docker CLI that runs BuildKit, and reading its failures, without a daemon."""

from __future__ import annotations

from pathlib import Path

from builder.engine import buildkit


def fake_cli(path: Path, version: str, buildx: bool) -> str:
    path.write_text(
        "#!/bin/sh\n"
        f'[ "$1" = --version ] && echo "Docker version {version}, build 0000000" && exit 0\n'
        f'[ "$1" = buildx ] && {"echo v0.10 && exit 0" if buildx else "exit 1"}\n'
        "exit 2\n"
    )
    path.chmod(0o755)
    return str(path)


def test_a_client_with_buildkit_built_in_or_with_buildx_is_chosen(tmp_path: Path) -> None:
    debian = fake_cli(tmp_path / "docker-20", "20.10.24+dfsg1", buildx=False)
    bare_new = fake_cli(tmp_path / "docker-28", "28.2.2", buildx=False)
    new_with_buildx = fake_cli(tmp_path / "docker-28-buildx", "28.2.2", buildx=True)
    assert buildkit.find_cli((bare_new, debian)) == debian
    assert buildkit.find_cli((bare_new, None)) is None  # 23+ without buildx: BuildKit is not there
    assert buildkit.find_cli((bare_new, new_with_buildx)) == new_with_buildx
    assert buildkit.find_cli((str(tmp_path / "missing"),)) is None


def test_a_failed_build_is_summed_up_as_the_classic_builder_words_it() -> None:
    run = "/bin/bash /opt/stackbuild/steps/x/build.sh"
    as_debian_20_10_prints_it = [
        f"#9 ERROR: executor failed running [{run}]: exit code: 1",
        "------",
        ' > [5/5] RUN ["/bin/bash", "/opt/stackbuild/steps/x/build.sh"]:',
        "------",
        f"executor failed running [{run}]: exit code: 1",
    ]
    wrapped = [f"failed to solve: rpc error: code = Unknown desc = executor failed running [{run}]: exit code: 2"]
    assert buildkit.failure(as_debian_20_10_prints_it, 1) == f"The command '{run}' returned a non-zero code: 1"
    assert buildkit.failure(wrapped, 1) == f"The command '{run}' returned a non-zero code: 2"
    as_buildx_prints_it = [f'ERROR: failed to solve: process "{run}" did not complete successfully: exit code: 3']
    assert buildkit.failure(as_buildx_prints_it, 1) == f"The command '{run}' returned a non-zero code: 3"
    assert buildkit.failure(["#3 ERROR: failed to read dockerfile"], 1) == "failed to read dockerfile"
    assert buildkit.failure(["something else"], 17) == "the build exited with 17"
