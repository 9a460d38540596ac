"""The CLI as a person meets it (real processes, run from where a person would be): the project found
from any directory under it, the default stack, input mistakes as exit 2 with one line and no log,
tracebacks never written into a directory that is not a project, and a closed pipe ending quietly."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def project(tmp_path: Path, stacks: tuple[str, ...] = ("reference", "8.5.0")) -> Path:
    root = tmp_path / "project"
    (root / "stacks").mkdir(parents=True)
    (root / "lockfiles").mkdir()
    for name in stacks:
        shutil.copy(ROOT / "stacks" / f"{name}.yaml", root / "stacks")
        shutil.copy(ROOT / "lockfiles" / f"{name}.lock.json", root / "lockfiles")
    shutil.copytree(
        ROOT / "stacks" / "reference", root / "stacks" / "reference", ignore=shutil.ignore_patterns("build")
    )
    return root


def stackbuild(cwd: Path, *argv: str, code: str = "pass") -> subprocess.CompletedProcess[str]:
    """`python -m builder ARGV` in cwd; code: Python run first (to make an error the CLI cannot expect)."""
    start = f"{code}; from builder.cli import main; raise SystemExit(main())"
    env = dict(os.environ, PYTHONPATH=str(ROOT), STACKBUILD_CACHE=str(cwd.parent / "cache"))
    return subprocess.run([sys.executable, "-c", start, *argv], cwd=cwd, capture_output=True, text=True, env=env)


def test_a_mistyped_stack_is_bad_input_in_one_line_with_the_likely_name_and_leaves_no_log(tmp_path: Path) -> None:
    root = project(tmp_path)
    run = stackbuild(root / "stacks", "render", "8.5.0-x")
    assert run.returncode == 2
    assert run.stderr.splitlines() == [
        f"stackbuild: error: no stack '8.5.0-x' ({root}/stacks/8.5.0-x.yaml does not exist; did you mean '8.5.0'? "
        "stacks: 8.5.0, reference)"
    ]
    assert not list(tmp_path.rglob(".stackbuild")) and not list(tmp_path.rglob("error-*.log"))


def test_a_missing_lockfile_is_bad_input_naming_the_command_that_makes_it(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "lockfiles" / "8.5.0.lock.json").unlink()
    run = stackbuild(root, "plan", "8.5.0")
    assert run.returncode == 2, run.stderr
    assert run.stderr.splitlines() == [
        f"stackbuild: error: {root}/lockfiles/8.5.0.lock.json: no lockfile: run `stackbuild lock 8.5.0`"
    ]


def test_the_project_is_found_from_any_directory_under_it(tmp_path: Path) -> None:
    """As git finds .git: stacks/ and lockfiles/ of the nearest directory above that holds stacks/."""
    root = project(tmp_path)
    deep = root / "stacks" / "reference" / "runtime"
    for cwd, stack in ((deep, "8.5.0"), (root / "stacks", "8.5.0.yaml")):
        run = stackbuild(cwd, "render", stack)
        assert run.returncode == 0, run.stderr
        assert "### catlass.Dockerfile" in run.stdout
    assert not list(tmp_path.rglob(".stackbuild"))


def test_the_stack_named_by_default_is_the_projects_only_one_else_reference(tmp_path: Path) -> None:
    only = project(tmp_path / "one", stacks=("8.5.0",))
    run = stackbuild(only, "render")
    assert run.returncode == 0 and "### catlass.Dockerfile" in run.stdout, run.stderr
    both = project(tmp_path / "two")
    run = stackbuild(both, "plan")
    assert run.returncode == 0 and "harness" in run.stdout, run.stderr
    (both / "stacks" / "reference.yaml").rename(both / "stacks" / "mine.yaml")
    run = stackbuild(both, "plan")
    assert run.returncode == 2
    assert run.stderr.splitlines() == [
        f"stackbuild: error: name a stack: {both}/stacks holds 8.5.0, mine and no reference"
    ]


def test_outside_a_project_nothing_is_written_where_stackbuild_ran(tmp_path: Path) -> None:
    """No stacks/ here or above: bad input; an unexpected error's traceback goes to the cache's logs."""
    empty = tmp_path / "somewhere"
    empty.mkdir()
    run = stackbuild(empty, "render")
    assert run.returncode == 2
    assert run.stderr.startswith(f"stackbuild: error: no stacks/ in {empty} or a directory above it")
    run = stackbuild(empty, "render", code="import builder.cli.context as c; c.Context.default_stack = None")
    assert run.returncode == 1 and "internal error: TypeError" in run.stderr
    log = Path(run.stderr.split("traceback in ")[1].rstrip(")\n"))
    assert log.parent == tmp_path / "cache" / "logs" and "Traceback" in log.read_text()
    assert not list(empty.iterdir())


def test_a_reader_that_stops_reading_ends_the_command_quietly(tmp_path: Path) -> None:
    """`stackbuild render | head -1`: the render (far over a pipe's buffer) ends at once, with no word."""
    root = project(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(ROOT), STACKBUILD_CACHE=str(tmp_path / "cache"))
    with subprocess.Popen(
        [sys.executable, "-m", "builder", "render", "8.5.0"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as render:
        assert render.stdout is not None and render.stderr is not None
        assert render.stdout.readline().startswith(b"### ")
        render.stdout.close()
        errors = render.stderr.read().decode()
        assert render.wait(timeout=60) == 141
    assert "Error" not in errors and "Exception" not in errors, errors


def test_from_a_subdirectory_the_projects_site_configuration_is_read_and_an_empty_stacks_dir_is_no_project(
    tmp_path: Path,
) -> None:
    root = project(tmp_path)
    (root / "stackbuild.site.yaml").write_text("installer_dir: [/srv/cann]\n")  # a typo the site check names
    for cwd in (root, root / "stacks" / "reference"):
        run = stackbuild(cwd, "render", "8.5.0")
        assert run.returncode == 2 and "installer_dir" in run.stderr, run.stderr
    inner = root / "stacks" / "reference" / "harness"
    (inner / "stacks").mkdir()  # a directory of that name with no manifest in it is not a project
    run = stackbuild(inner, "render", "8.5.0")
    assert run.returncode == 2 and "installer_dir" in run.stderr, run.stderr


def test_a_command_reads_the_site_configuration_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every step of one command sees the same site configuration: the file is read when first asked for,
    and not again (an edit while a command runs does not reach half of it)."""
    from builder.cli.context import Context
    from builder.inputs import site
    from builder.model.settings import Settings

    path = tmp_path / "site.yaml"
    path.write_text("download_limit: 1GiB\n")
    reads: list[Path | None] = []
    real = site.load

    def counted(given: Path | None) -> site.SiteConfig:
        reads.append(given)
        return real(given)

    monkeypatch.setattr(site, "load", counted)
    ctx = Context(root=tmp_path, debug=False, settings=Settings(tmp_path / "cache", path, Path("/")))
    first = ctx.site()
    path.write_text("download_limit: 2GiB\n")
    assert ctx.site() is first and reads == [path] and int(first.download_limit) == 1 << 30
