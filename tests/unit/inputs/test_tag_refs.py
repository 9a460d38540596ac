"""Tags from an upstream are kept only under names git accepts that start no component with a dash:
one named like an option (`--file=<a host file>`) never becomes one, and copies no host file into a
checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from builder.inputs import git
from builder.store.cache import Cache
from tests.helpers import git as run_git
from tests.upstream import SECRET, bare_repo


def test_an_upstream_tag_named_like_an_option_copies_no_host_file_into_a_checkout(tmp_path: Path) -> None:
    repo, commit = bare_repo(tmp_path)
    secret = tmp_path / "shadow"
    secret.write_text(SECRET)
    run_git("update-ref", f"refs/tags/--file={secret}", commit, cwd=repo)  # any upstream can carry one
    run_git("update-ref", "refs/tags/v1.0", commit, cwd=repo)
    cache = Cache(tmp_path / "cache")
    mirror = git.mirror(f"file://{repo}", commit, cache)
    checkout = tmp_path / "checkout"
    git.shallow_checkout(mirror, f"file://{repo}", commit, checkout)
    tags = run_git("for-each-ref", "--format=%(refname) %(objecttype)", "refs/tags", cwd=checkout)
    assert tags.splitlines() == ["refs/tags/v1.0 commit"]
    # The attack made an annotated tag whose message was the host file: no tag object at all now.
    kinds = run_git("cat-file", "--batch-all-objects", "--batch-check=%(objecttype)", cwd=checkout)
    assert "tag" not in kinds.split() and "blob" in kinds.split()


NAMES = [
    "v8.5.0",
    "release/1.6.3-rc1",
    "8.5.0.alpha001",
    "a_b+c",
    "",
    "/x",
    "x//y",
    "x/",
    "-x",
    "a/-b",
    ".x",
    "a/.b",
    "a..b",
    "x.lock",
    "a.lock/b",
    "a b",
    "a~b",
    "a^b",
    "a:b",
    "a?b",
    "a*b",
    "a[b",
    "a\\b",
    "a@{b",
    "x.",
    "\x7f",
    "é",
    "@",
    "a@b",
]


@pytest.mark.parametrize("name", NAMES)
def test_a_tag_name_is_kept_only_when_git_accepts_it_and_it_starts_no_component_with_a_dash(name: str) -> None:
    accepted = subprocess.run(["git", "check-ref-format", f"refs/tags/{name}"], capture_output=True).returncode == 0
    dash = any(part.startswith("-") for part in name.split("/"))
    # Stricter than git only where it must be: a leading dash, a name that is not ASCII, '@' alone.
    stricter = dash or not name.isascii() or name == "@"
    assert git.safe_tag_ref(f"refs/tags/{name}") == (accepted and not stricter), name


@pytest.mark.parametrize(
    "ref", ["refs/tags/-x", "refs/tags/a/-b", "refs/tags/a..b", "refs/tags/x.lock", "refs/tags/a b", "refs/heads/v1"]
)
def test_unsafe_tag_refs_are_left_out(ref: str) -> None:
    assert not git.safe_tag_ref(ref)


def test_ordinary_tag_refs_are_kept() -> None:
    assert all(git.safe_tag_ref(r) for r in ("refs/tags/v8.5.0", "refs/tags/release/1.6.3-rc1", "refs/tags/a_b+c"))
