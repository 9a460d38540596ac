"""What a served repository's .gitmodules can ask for and is not given: an include of a host file, a
submodule at a path or file:// URL of this host, more submodules than MAX_SUBMODULES."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.inputs import git, submodules
from builder.inputs.site import SiteConfig
from builder.store.cache import Cache
from tests.helpers import add_submodule, make_repo
from tests.helpers import git as run_git
from tests.upstream import bare_repo, git_commit


def test_gitmodules_includes_are_not_followed(tmp_path: Path) -> None:
    work = tmp_path / "work"
    make_repo(work)
    host_file = tmp_path / "host.gitconfig"
    host_file.write_text('[submodule "evil"]\n\tpath = evil\n\turl = file:///srv/host-repo\n')
    (work / ".gitmodules").write_text(
        f'[include]\n\tpath = {host_file}\n[submodule "dep"]\n\tpath = dep\n\turl = ../dep.git\n'
    )
    run_git("add", ".gitmodules", cwd=work)
    run_git("commit", "-q", "-m", "modules", cwd=work)
    commit = run_git("rev-parse", "HEAD", cwd=work)
    assert git.gitmodules(str(work), commit) == {"dep": {"path": "dep", "url": "../dep.git"}}


@pytest.mark.parametrize("how", ["file://{repo}", "{repo}", "objects/../../../../../../../..{repo}"])
def test_a_served_repository_cannot_point_a_submodule_at_this_hosts_files(tmp_path: Path, how: str) -> None:
    host_repo, _ = bare_repo(tmp_path / "host")  # a repository of this host the attacker names
    make_repo(tmp_path / "lib", "lib v1")
    add_submodule(tmp_path / "lib", f"file://{host_repo}", "3rdparty/x", how.replace("{repo}", str(host_repo)))
    lib = git_commit(tmp_path / "lib")
    served = "https://git.example.invalid/lib.git"  # fetched from there (its mirror is the local work tree)
    cache = Cache(tmp_path / "c")
    with pytest.raises(git.SourceError, match=r"not a server's URL \(a path on this host\?\)"):
        submodules.resolve(served, f"file://{tmp_path}/lib", lib, cache, SiteConfig())
    assert [p.name for p in cache.git_mirrors()] == [cache.git_mirror(f"file://{tmp_path}/lib").name]  # nothing fetched
    if how != "file://{repo}":
        return
    # The same tree as a file:// repository of this host keeps its file:// submodule.
    lib_url = f"file://{tmp_path}/lib"
    found = submodules.resolve(lib_url, lib_url, lib, Cache(tmp_path / "c"), SiteConfig())
    assert [s.url for s in found] == [f"file://{host_repo}"]


def test_a_tree_of_too_many_submodules_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(submodules, "MAX_SUBMODULES", 3)
    dep, _ = bare_repo(tmp_path / "dep")
    make_repo(tmp_path / "lib", "lib v1")
    for n in range(4):
        add_submodule(tmp_path / "lib", f"file://{dep}", f"3rdparty/d{n}")
    lib = git_commit(tmp_path / "lib")
    with pytest.raises(git.SourceError, match="more than 3 submodules in its tree"):
        submodules.resolve(f"file://{tmp_path}/lib", f"file://{tmp_path}/lib", lib, Cache(tmp_path / "c"), SiteConfig())
