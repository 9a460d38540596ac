"""Git objects are checked as they arrive (issue 48): a commit whose tree git's fsck refuses (a
symlink and a directory of one name, which let `git archive` write through the link) is refused at
`lock`, once in the cache's store too, and a site can let one named check through for one repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from builder.inputs import git
from builder.store.cache import Cache
from tests.helpers import git as run_git
from tests.helpers import run_cli


def duplicate_entries_repo(path: Path) -> str:
    """A repository whose main holds a tree with a symlink `a` (to ../../outside) and a directory `a`
    (git fsck: duplicateEntries); its commit."""
    run_git("init", "-q", "-b", "main", str(path), cwd=path.parent)

    def write(kind: str, data: str) -> str:
        return run_git("hash-object", "-w", "-t", kind, "--stdin", cwd=path, stdin=data)

    blob = write("blob", "written outside the context\n")
    link = write("blob", "../../outside")
    inner = run_git("mktree", cwd=path, stdin=f"100644 blob {blob}\tpwned\n")
    tree = run_git("mktree", cwd=path, stdin=f"120000 blob {link}\ta\n040000 tree {inner}\ta\n")
    commit = run_git("commit-tree", tree, "-m", "duplicate entries", cwd=path)
    run_git("update-ref", "refs/heads/main", commit, cwd=path)
    return commit


def project(base: Path, repo_url: str, site: str = "{}\n") -> Path:
    """A project with stacks/demo.yaml: one component whose source is repo_url's main."""
    root = base / "project"
    (root / "stacks").mkdir(parents=True)
    run_git("init", "-q", "-b", "main", str(root), cwd=base)
    valid = (Path(__file__).parents[2] / "manifests" / "valid.yaml").read_text()
    assert "source: {path: .}" in valid
    (root / "stacks" / "demo.yaml").write_text(
        valid.replace("name: mini", "name: demo").replace(
            "source: {path: .}", f"source: {{git: '{repo_url}', ref: main}}"
        )
    )
    (base / "site.yaml").write_text(site)
    return root


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """The duplicate-entries repository's file:// URL and commit; the cache and site are the test's."""
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("STACKBUILD_SITE_CONFIG", str(tmp_path / "site.yaml"))
    (tmp_path / "repo").mkdir()
    return f"file://{tmp_path}/repo", duplicate_entries_repo(tmp_path / "repo")


def test_lock_refuses_a_commit_git_fsck_refuses_in_one_line_and_writes_no_lock(
    tmp_path: Path, hostile: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    url, commit = hostile
    root = project(tmp_path, url)
    code, out, err = run_cli(capsys, "--root", str(root), "lock", "demo")
    assert code == 1, err
    errors = [line for line in err.splitlines() if line.startswith("stackbuild: error:")]
    assert len(errors) == 1 and err.rstrip().endswith(errors[0]), err  # after the progress lines, one error
    assert url in errors[0] and commit in errors[0], errors[0]
    assert "duplicateEntries: contains duplicate file entries" in errors[0]
    assert not (root / "lockfiles" / "demo.lock.json").exists()
    assert "Traceback" not in out + err


def test_a_site_lets_one_named_check_through_for_that_repository_alone(
    tmp_path: Path, hostile: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    url, commit = hostile
    root = project(tmp_path, url, site=f"fsck_skip:\n  '{url}': [duplicateEntries]\n")
    code, _, err = run_cli(capsys, "--root", str(root), "lock", "demo")
    assert code == 0, err
    assert commit in (root / "lockfiles" / "demo.lock.json").read_text()


def test_another_check_skipped_does_not_let_it_through(
    tmp_path: Path, hostile: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = hostile
    root = project(tmp_path, url, site=f"fsck_skip:\n  '{url}': [missingSpaceBeforeDate]\n")
    code, _, err = run_cli(capsys, "--root", str(root), "lock", "demo")
    assert code == 1 and "duplicateEntries" in err, err


@pytest.mark.parametrize("value", ["'*'", "['fetch.fsckObjects=false']", "[-c]", "['']"])
def test_a_site_cannot_turn_the_checks_off_wholesale(
    tmp_path: Path, hostile: tuple[str, str], capsys: pytest.CaptureFixture[str], value: str
) -> None:
    url, _ = hostile
    root = project(tmp_path, url, site=f"fsck_skip:\n  '{url}': {value}\n")
    code, _, err = run_cli(capsys, "--root", str(root), "lock", "demo")
    assert code == 2, err
    assert "fsck_skip" in err and len(err.strip().splitlines()) == 1, err  # before any progress line
    assert not (root / "lockfiles" / "demo.lock.json").exists()


def test_a_store_an_earlier_stackbuild_fetched_unchecked_is_checked_once(
    tmp_path: Path, hostile: tuple[str, str]
) -> None:
    url, commit = hostile
    cache = Cache(tmp_path / "cache")
    store = cache.git_mirror(url)
    store.parent.mkdir(parents=True)
    # As git.mirror fetched before objects were checked on the way in.
    subprocess.run(["git", "init", "-q", "--bare", str(store)], check=True)
    subprocess.run(["git", "-C", str(store), "fetch", "-q", "--depth", "1", url, commit], check=True)
    with pytest.raises(git.SourceError, match=r"the cache's copy: git's object check refused .*: duplicateEntries"):
        git.mirror(url, commit, cache)
    assert git.mirror(url, commit, cache, ["duplicateEntries"]) == store  # what the site lets through passes
