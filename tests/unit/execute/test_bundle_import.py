"""Importing an air-gap bundle (a directory handed over on a USB stick) runs no command here, reads no
host file into the cache, and leaves no half a file: an entry outside lock.json and blobs/, a blob that
is no regular file of its size, a git store borrowing a host repository's objects, a commit or tag
named like an option are each refused or left out; the mirror's tags are never moved or added to.

Real git and real files throughout; each test's attack is the one issue 23 reproduced."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from builder.execute.bundle import import_bundle
from builder.inputs import git
from builder.inputs.site import SiteConfig
from builder.model.errors import InputError, StackbuildError
from builder.store.cache import Cache
from tests.helpers import git as run_git
from tests.helpers import run_cli
from tests.upstream import SECRET, bare_repo, git_commit


def bundle_of(
    base: Path, commit: str, store: Path | None = None, files: dict[str, dict[str, object]] | None = None
) -> Path:
    """A bundle directory: lock.json, the given file entries, one git store (a copy of store) for commit."""
    bundle = base / "bundle"
    (bundle / "git").mkdir(parents=True)
    lock = b'{"lock_version": 2}\n'
    (bundle / "lock.json").write_bytes(lock)
    listed: dict[str, dict[str, object]] = {
        "lock.json": {"sha256": hashlib.sha256(lock).hexdigest(), "size": len(lock)},
        **(files or {}),
    }
    entries = []
    if store is not None:
        run_git("clone", "-q", "--bare", str(store), str(bundle / "git" / "0123456789abcdef.git"), cwd=base)
        entries.append({"url": "https://example.invalid/lib.git", "commit": commit, "path": "git/0123456789abcdef.git"})
    manifest = {"format": 1, "stack": "s", "lock_sha256": "a" * 64, "files": listed, "git": entries}
    (bundle / "bundle.json").write_text(json.dumps(manifest))
    return bundle


def cache_files(cache: Cache) -> list[Path]:
    return sorted(p for p in cache.root.rglob("*") if p.is_file()) if cache.root.exists() else []


def test_a_bundle_commit_that_is_an_option_runs_nothing_and_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, commit = bare_repo(tmp_path)
    marker = tmp_path / "MARKER"
    hostile = f"--upload-pack=touch${{IFS}}{marker}"
    bundle = bundle_of(tmp_path, commit, repo)
    store = bundle / "git" / "0123456789abcdef.git"
    with (store / "packed-refs").open("a") as refs:  # so that `tag --points-at <commit>` would have succeeded
        refs.write(f"{commit} refs/tags/{hostile}\n")
    manifest = json.loads((bundle / "bundle.json").read_text())
    manifest["git"][0]["commit"] = hostile
    (bundle / "bundle.json").write_text(json.dumps(manifest))
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))
    code, _, err = run_cli(capsys, "import", str(bundle))
    assert code == 2 and not marker.exists()
    assert err.strip().count("\n") == 0 and "git.0.commit" in err, err


@pytest.mark.parametrize(
    ("name", "entry", "field"),
    [
        ("../../../../etc/hostname", {"sha256": "", "size": 1}, "files"),
        ("/dev/zero", {"sha256": "b" * 64, "size": 10}, "files"),
        ("blobs/" + "c" * 64, {"sha256": "d" * 64, "size": 1}, "files"),  # a name that is not its hash
        ("blobs/" + "c" * 64, {"size": 1}, "files.blobs/" + "c" * 64 + ".sha256"),
        ("lock.json", {"sha256": "e" * 64, "size": "many"}, "files.lock.json.size"),
    ],
)
def test_a_bundle_entry_outside_lock_and_blobs_or_malformed_is_one_line_and_enters_nothing(
    tmp_path: Path, name: str, entry: dict[str, object], field: str
) -> None:
    bundle = bundle_of(tmp_path, "0" * 40, files={name: entry})
    cache = Cache(tmp_path / "cache")
    with pytest.raises(InputError) as err:
        import_bundle(bundle, SiteConfig(), cache, print)
    assert "\n" not in str(err.value) and f"bundle.json: {field}" in str(err.value), err.value
    assert cache_files(cache) == []


@pytest.mark.parametrize("kind", ["symlink", "fifo", "larger", "smaller"])
def test_a_blob_that_is_no_regular_file_of_its_declared_size_is_refused_leaving_nothing(
    tmp_path: Path, kind: str
) -> None:
    data = b"a toolkit package\n"
    sha = hashlib.sha256(data).hexdigest()
    bundle = bundle_of(tmp_path, "0" * 40, files={f"blobs/{sha}": {"sha256": sha, "size": len(data)}})
    blob = bundle / "blobs" / sha
    blob.parent.mkdir()
    secret = tmp_path / "secret"
    secret.write_bytes(data)  # even the right bytes, through a link, are a host file
    if kind == "symlink":
        blob.symlink_to(secret)
    elif kind == "fifo":
        os.mkfifo(blob)
    elif kind == "larger":
        blob.write_bytes(data + b"and then some\n" * 1000)
    else:
        blob.write_bytes(data[:-1])
    cache = Cache(tmp_path / "cache")
    with pytest.raises(StackbuildError) as err:
        import_bundle(bundle, SiteConfig(), cache, print)
    assert str(blob) in str(err.value) and "\n" not in str(err.value)
    assert cache_files(cache) == [], "nothing of it, not even a partial file in cache/tmp"
    assert kind != "fifo" or stat.S_ISFIFO(blob.stat().st_mode)


def test_a_bundle_store_whose_alternates_point_at_a_host_repository_brings_nothing_of_it(tmp_path: Path) -> None:
    repo, commit = bare_repo(tmp_path)
    bundle = bundle_of(tmp_path, commit, repo)
    store = bundle / "git" / "0123456789abcdef.git"
    # The store holds no objects of its own: they would come from the host's repository.
    for pack in (store / "objects" / "pack").iterdir():
        pack.unlink()
    for loose in (store / "objects").glob("[0-9a-f][0-9a-f]"):
        for obj in loose.iterdir():
            obj.unlink()
    (store / "objects" / "info").mkdir(exist_ok=True)
    (store / "objects" / "info" / "alternates").write_text(f"{repo}/objects\n")
    (store / "config").write_text("[core]\n\tfsmonitor = touch " + str(tmp_path / "MARKER") + "\n")
    cache = Cache(tmp_path / "cache")
    with pytest.raises(StackbuildError, match=r"not our ref|missing|bad object|remote did not send|unable to read"):
        import_bundle(bundle, SiteConfig(), cache, print)
    assert not (tmp_path / "MARKER").exists()
    assert not cache.git_mirror("https://example.invalid/lib.git").exists(), "no store made from the host's objects"


def test_a_bundle_store_whose_objects_are_a_link_to_a_host_repository_brings_nothing_of_it(tmp_path: Path) -> None:
    private, commit = bare_repo(tmp_path / "private")  # a repository of this host the bundle's author knows of
    bundle = bundle_of(tmp_path, commit, private)
    store = bundle / "git" / "0123456789abcdef.git"
    shutil.rmtree(store / "objects")
    (store / "objects").symlink_to(private / "objects")
    cache = Cache(tmp_path / "cache")
    with pytest.raises(StackbuildError):
        import_bundle(bundle, SiteConfig(), cache, print)
    assert not cache.git_mirror("https://example.invalid/lib.git").exists(), "the host's commit entered the cache"


def test_a_bundle_tag_named_like_an_option_on_a_good_commit_is_left_out(tmp_path: Path) -> None:
    repo, commit = bare_repo(tmp_path)
    secret = tmp_path / "shadow"
    secret.write_text(SECRET)
    run_git("update-ref", f"refs/tags/--file={secret}", commit, cwd=repo)
    run_git("update-ref", "refs/tags/v1.0", commit, cwd=repo)
    bundle = bundle_of(tmp_path, commit, repo)
    cache = Cache(tmp_path / "cache")
    import_bundle(bundle, SiteConfig(), cache, print)
    stored = cache.git_mirror("https://example.invalid/lib.git")
    assert run_git("for-each-ref", "--format=%(refname)", "refs/tags", cwd=stored) == "refs/tags/v1.0"


def test_a_good_bundle_still_imports(tmp_path: Path) -> None:
    repo, commit = bare_repo(tmp_path)
    run_git("update-ref", "refs/tags/v1.0", commit, cwd=repo)
    data = b"package\n"
    sha = hashlib.sha256(data).hexdigest()
    bundle = bundle_of(tmp_path, commit, repo, files={f"blobs/{sha}": {"sha256": sha, "size": len(data)}})
    (bundle / "blobs").mkdir()
    (bundle / "blobs" / sha).write_bytes(data)
    cache = Cache(tmp_path / "cache")
    done = import_bundle(bundle, SiteConfig(), cache, print)
    assert (done.files, done.bytes, done.commits) == (1, len(data), 1)
    assert cache.blob(sha).read_bytes() == data
    stored = cache.git_mirror("https://example.invalid/lib.git")
    assert run_git("for-each-ref", "--format=%(refname)", "refs/tags", cwd=stored) == "refs/tags/v1.0"


URL = "https://example.invalid/lib.git"


def upstream_site(repo: Path) -> SiteConfig:
    """This machine fetches the bundle's URL from repo: the upstream a build's mirror came from."""
    return SiteConfig.model_validate({"url_rewrites": [{"from": URL, "to": f"file://{repo}"}]})


def tags_of(repository: Path) -> list[str]:
    return run_git("for-each-ref", "--format=%(refname) %(objectname)", "refs/tags", cwd=repository).splitlines()


def described(mirror: Path, commit: str, checkout: Path) -> str:
    """What setuptools-scm reads in a keep_git checkout of commit (the commit itself without a tag)."""
    git.shallow_checkout(mirror, URL, commit, checkout)
    return run_git("describe", "--tags", "--always", cwd=checkout)


@pytest.mark.parametrize("upstream_tags", [[], ["v1.0"]])
def test_a_bundle_gives_no_new_tag_to_a_commit_the_mirror_holds(tmp_path: Path, upstream_tags: list[str]) -> None:
    """A fake version for `git describe`: the mirror's tags on a commit came with it from upstream."""
    repo, commit = bare_repo(tmp_path)
    for tag in upstream_tags:
        run_git("update-ref", f"refs/tags/{tag}", commit, cwd=repo)
    cache = Cache(tmp_path / "cache")
    mirror = git.mirror(f"file://{repo}", commit, cache)
    before = tags_of(mirror), described(mirror, commit, tmp_path / "before")
    bundle = bundle_of(tmp_path, commit, repo)
    run_git("tag", "-a", "-m", "fake", "v99.0", commit, cwd=bundle / "git" / "0123456789abcdef.git")
    said: list[str] = []
    import_bundle(bundle, upstream_site(repo), cache, said.append)
    assert (tags_of(mirror), described(mirror, commit, tmp_path / "after")) == before
    assert [line for line in said if "tags v99.0 not taken" in line], said


def next_commit(tmp_path: Path, repo: Path) -> str:
    """A second commit on bare_repo's work tree, pushed to repo's branch next."""
    work = tmp_path / "work"
    (work / "README").write_text("v2")
    run_git("commit", "-q", "-am", "v2", cwd=work)
    second = git_commit(work)
    run_git("push", "-q", str(repo), "HEAD:refs/heads/next", cwd=work)
    return second


def test_a_bundle_moves_no_tag_of_the_mirror_and_still_imports(tmp_path: Path) -> None:
    """The bundle's v1.0 on a commit new here, where the mirror's v1.0 names another: left as it is."""
    repo, first = bare_repo(tmp_path)
    run_git("update-ref", "refs/tags/v1.0", first, cwd=repo)
    cache = Cache(tmp_path / "cache")
    mirror = git.mirror(f"file://{repo}", first, cache)
    second = next_commit(tmp_path, repo)
    bundle = bundle_of(tmp_path, second, repo)
    run_git("update-ref", "refs/tags/v1.0", second, cwd=bundle / "git" / "0123456789abcdef.git")
    said: list[str] = []
    import_bundle(bundle, upstream_site(repo), cache, said.append)
    assert tags_of(mirror) == [f"refs/tags/v1.0 {first}"]
    assert run_git("cat-file", "-t", second, cwd=mirror) == "commit"
    assert [line for line in said if "tags v1.0 not taken" in line], said


def test_a_commit_new_to_the_mirror_brings_the_bundles_tags_on_it(tmp_path: Path) -> None:
    """As an upstream fetch of a missing commit brings its tags: the bundle is where it comes from here."""
    repo, first = bare_repo(tmp_path)
    cache = Cache(tmp_path / "cache")
    mirror = git.mirror(f"file://{repo}", first, cache)
    second = next_commit(tmp_path, repo)
    run_git("update-ref", "refs/tags/v2.0", second, cwd=repo)
    import_bundle(bundle_of(tmp_path, second, repo), upstream_site(repo), cache, print)
    assert tags_of(mirror) == [f"refs/tags/v2.0 {second}"]
    assert described(mirror, second, tmp_path / "checkout") == "v2.0"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving the bundle's store to another user needs root")
def test_a_bundle_whose_git_store_belongs_to_another_user_imports(tmp_path: Path) -> None:
    repo, commit = bare_repo(tmp_path)
    bundle = bundle_of(tmp_path, commit, repo)
    for path in [bundle / "git", *(bundle / "git").rglob("*")]:
        os.chown(path, 65534, 65534, follow_symlinks=False)  # nobody's, as a USB stick from elsewhere has it
    done = import_bundle(bundle, SiteConfig(), Cache(tmp_path / "cache"), print)
    assert done.commits == 1
