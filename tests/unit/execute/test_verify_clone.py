"""Where verify-reproducible's second build reads the stack from: a fresh clone of the checkout with
another origin URL (real git), at another commit when asked, else with the working tree's changes."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from builder import lock as lock_io
from builder.execute.reproduce import Conditions, RemoteTraceback, compare, elsewhere, forget, fresh_build, under
from builder.execute.stage_image import StageImages
from builder.execute.stage_log import StageFailed
from builder.model.errors import InputError
from builder.model.names import DEFAULT_PREFIX
from builder.store.cache import Cache
from tests.conftest import ROOT
from tests.fake_engine import FakeEngine
from tests.golden_plan import golden_plan
from tests.helpers import git, run_cli


def checkout(tmp_path: Path) -> Path:
    """This project's stacks and lockfiles in a git checkout of their own, one commit, origin elsewhere."""
    top = tmp_path / "project"
    shutil.copytree(ROOT / "stacks", top / "stacks", ignore=shutil.ignore_patterns("__pycache__", "build"))
    shutil.copytree(ROOT / "lockfiles", top / "lockfiles")
    git("init", "-q", "-b", "main", cwd=top)
    git("remote", "add", "origin", "https://git.example.com/team/stacks.git", cwd=top)
    git("add", "-A", cwd=top)
    git("commit", "-q", "-m", "stacks", cwd=top)
    return top


def test_the_second_build_reads_a_clone_with_another_origin_and_the_working_trees_changes(tmp_path: Path) -> None:
    top = checkout(tmp_path)
    (top / "stacks" / "reference.yaml").write_text((top / "stacks" / "reference.yaml").read_text() + "# edited\n")
    (top / "stacks" / "new-file.txt").write_text("not committed yet\n")
    (top / "stacks" / "8.5.0.yaml").unlink()
    manifest, lock = top / "stacks" / "reference.yaml", top / "lockfiles" / "reference.lock.json"
    with elsewhere(manifest, lock, None) as there:
        clone = there.manifest.parents[1]
        assert clone != top and not clone.is_relative_to(top)
        assert there.manifest.read_text().endswith("# edited\n")
        assert (clone / "stacks" / "new-file.txt").read_text() == "not committed yet\n"
        assert not (clone / "stacks" / "8.5.0.yaml").exists()
        assert there.lock == clone / "lockfiles" / "reference.lock.json"
        assert git("remote", "get-url", "origin", cwd=clone) == top.resolve().as_uri()
        assert git("rev-parse", "HEAD", cwd=clone) == git("rev-parse", "HEAD", cwd=top)
        assert "and the working tree's changes" in there.how
    assert not clone.exists()


def test_staged_renames_and_deletions_and_a_link_become_a_directory_are_what_the_clone_holds(tmp_path: Path) -> None:
    """What `git mv`, `git rm` and a tracked link replaced by a directory leave in the working tree is
    what the clone holds: no file of HEAD stays, and nothing is written through HEAD's link."""
    top = checkout(tmp_path)
    target = tmp_path / "outside"
    target.mkdir()
    (top / "stacks" / "link").symlink_to(target)
    git("add", "stacks/link", cwd=top)
    git("commit", "-q", "-m", "a link", cwd=top)
    git("mv", "stacks/8.5.0.yaml", "stacks/renamed.yaml", cwd=top)
    git("rm", "-q", "stacks/6.3.RC1.yaml", cwd=top)
    (top / "stacks" / "link").unlink()
    (top / "stacks" / "link").mkdir()
    (top / "stacks" / "link" / "file.txt").write_text("in a directory now\n")
    manifest, lock = top / "stacks" / "reference.yaml", top / "lockfiles" / "reference.lock.json"
    with elsewhere(manifest, lock, None) as there:
        stacks = there.manifest.parent
        assert (stacks / "renamed.yaml").is_file() and not (stacks / "8.5.0.yaml").exists()
        assert not (stacks / "6.3.RC1.yaml").exists()
        assert not (stacks / "link").is_symlink()
        assert (stacks / "link" / "file.txt").read_text() == "in a directory now\n"
    assert list(target.iterdir()) == []


def test_at_a_revision_the_clone_has_that_commit_and_nothing_of_the_working_tree(tmp_path: Path) -> None:
    top = checkout(tmp_path)
    first = git("rev-parse", "HEAD", cwd=top)
    (top / "README.md").write_text("one more commit\n")
    git("add", "README.md", cwd=top)
    git("commit", "-q", "-m", "a README", cwd=top)
    (top / "stacks" / "new-file.txt").write_text("not committed\n")
    manifest, lock = top / "stacks" / "reference.yaml", top / "lockfiles" / "reference.lock.json"
    with elsewhere(manifest, lock, "HEAD~1") as there:
        clone = there.manifest.parents[1]
        assert git("rev-parse", "HEAD", cwd=clone) == first and first[:12] in there.how
        assert not (clone / "README.md").exists() and not (clone / "stacks" / "new-file.txt").exists()
    refused = pytest.raises(InputError, match=r"--at no-such-branch: no such commit in .*: give a commit")
    with refused, elsewhere(manifest, lock, "no-such-branch"):
        pass


def test_outside_a_git_checkout_it_is_a_copy_and_at_is_refused(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "stacks", tmp_path / "plain" / "stacks", ignore=shutil.ignore_patterns("__pycache__"))
    manifest = tmp_path / "plain" / "stacks" / "reference.yaml"
    lock = ROOT / "lockfiles" / "reference.lock.json"
    with elsewhere(manifest, lock, None) as there:
        assert there.manifest.read_bytes() == manifest.read_bytes() and there.lock == lock
        assert "not a git checkout" in there.how
    with (
        pytest.raises(InputError, match=r"--at HEAD: .* are not in one git checkout"),
        elsewhere(manifest, lock, "HEAD"),
    ):
        pass


def test_at_a_commit_with_another_lock_is_refused_before_anything_is_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    top = checkout(tmp_path)
    path = top / "lockfiles" / "reference.lock.json"
    lock_io.write(lock_io.read(path).model_copy(update={"order": list(reversed(lock_io.read(path).order))}), path)
    git("commit", "-q", "-am", "another lock", cwd=top)
    code, _, err = run_cli(capsys, "--root", str(top), "verify-reproducible", "reference", "--at", "HEAD~1")
    assert code == 2, err
    (line,) = err.strip().splitlines()
    assert "--at HEAD~1: reference.lock.json there is another lock than the checkout's" in line, err
    assert "give a commit whose lock is the same" in line


def test_two_fresh_builds_compare_stage_by_stage_and_a_differing_stage_says_what_differs(tmp_path: Path) -> None:
    """verify-reproducible's core on the fake engine: each run builds every stage from its own
    parents, the verdicts compare image ids, a differing stage is named with what differs (here the
    config: the fake's images differ only there), and each run's tags are forgotten afterwards."""
    golden = golden_plan()
    plan = dataclasses.replace(golden, stages={n: dataclasses.replace(s, context=()) for n, s in golden.stages.items()})
    engine = FakeEngine()
    builds = StageImages(plan, engine, Cache(tmp_path / "cache"), tmp_path / "logs")
    first, second = fresh_build(builds, "first", print), fresh_build(builds, "second", print)
    assert first.keys() == second.keys() == plan.stages.keys()
    assert all(verdict.same for verdict in compare(plan, (engine, first), (engine, second)))
    kernels_parents = [
        args["TOOLKIT_IMAGE"] for args in engine.build_args if {"DEVKIT_IMAGE", "TOOLKIT_IMAGE"} <= set(args)
    ]
    assert any(ref.startswith(f"{DEFAULT_PREFIX}/verify/first-toolkit:") for ref in kernels_parents)
    assert any(ref.startswith(f"{DEFAULT_PREFIX}/verify/second-toolkit:") for ref in kernels_parents)

    moved = {**second, "kernels": "sha256:another"}
    (verdict,) = [v for v in compare(plan, (engine, first), (engine, moved)) if not v.same]
    assert verdict.stage == "kernels" and verdict.differences == ("config config",)
    forget(engine, plan, "first")
    made = {f"{DEFAULT_PREFIX}/verify/first-{name}:{stage.key}" for name, stage in plan.stages.items()}
    assert made <= set(engine.removed)


def _conditions_here(scratch: Path) -> tuple[int, str, int]:
    """The umask, the time zone's name and the mode a new file gets, as the process running this sees them."""
    umask = os.umask(0)
    os.umask(umask)
    (scratch / "made").write_text("")
    return umask, time.strftime("%Z", time.localtime(0)), (scratch / "made").stat().st_mode & 0o777


def test_the_second_build_runs_in_a_process_of_its_own_with_its_umask_and_zone(tmp_path: Path) -> None:
    """verify-reproducible's second build sees umask 027 and another zone; this process (whose threads
    run builds) never does."""
    before = _conditions_here(tmp_path)
    (tmp_path / "made").unlink()
    umask, zone, mode = under(Conditions(umask=0o027, zone="Asia/Shanghai"), _conditions_here, tmp_path)
    assert (umask, zone, mode) == (0o027, "CST", 0o640)
    (tmp_path / "made").unlink()
    assert _conditions_here(tmp_path) == before


def _fails(log_file: Path) -> None:
    raise StageFailed("runtime", "step 2/2 failed", log_file=log_file, cause="a cause")


def test_a_stage_failing_in_the_second_builds_process_comes_back_as_it_was_raised(tmp_path: Path) -> None:
    with pytest.raises(StageFailed) as raised:
        under(Conditions(), _fails, tmp_path / "runtime.log")
    assert (raised.value.stage, raised.value.cause) == ("runtime", "a cause")
    assert (
        str(raised.value)
        == f"stage runtime failed: step 2/2 failed\nfull log: {tmp_path / 'runtime.log'}\nlikely cause: a cause"
    )


def _sleeps(pid_file: Path) -> None:
    pid_file.write_text(str(os.getpid()))
    time.sleep(120)


def _gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT], ids=["killed", "interrupted"])
def test_the_second_builds_process_ends_with_the_one_that_started_it(tmp_path: Path, how: int) -> None:
    """Killed (a CI cancel) or interrupted (Ctrl-C to it alone), the caller takes its spawned build with it."""
    pid_file = tmp_path / "child.pid"
    # Ctrl-C reaches a process whose SIGINT is Python's own: not one started in the background, which
    # inherits SIGINT ignored (a test run under `nohup ... &` would otherwise wait on a caller that
    # cannot be interrupted).
    code = (
        "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "import sys; from pathlib import Path; from builder.execute.reproduce import Conditions, under; "
        "from tests.unit.execute.test_verify_clone import _sleeps; under(Conditions(), _sleeps, Path(sys.argv[1]))"
    )
    parent = subprocess.Popen([sys.executable, "-c", code, str(pid_file)], cwd=ROOT, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline and parent.poll() is None
        time.sleep(0.05)
    child = int(pid_file.read_text())
    parent.send_signal(how)
    assert parent.wait(timeout=10) != 0
    assert _gone(child, 10)


def _breaks() -> None:
    raise ValueError("a bug in the second build")


def test_an_unexpected_error_in_the_second_builds_process_comes_back_with_its_traceback() -> None:
    with pytest.raises(ValueError, match="a bug in the second build") as raised:
        under(Conditions(), _breaks)
    assert isinstance(raised.value.__cause__, RemoteTraceback)
    assert 'in _breaks\n    raise ValueError("a bug in the second build")' in str(raised.value.__cause__)
