"""Git sources with submodules: resolved at lock time (recursively, relative URLs too) and present
in the build context at their pinned commits."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from builder import manifest
from builder.execute import chain
from builder.inputs.contexts import write_context
from builder.inputs.git import SourceError
from builder.inputs.git_source import LockedGit
from builder.inputs.site import SiteConfig
from builder.lock.locked import Lock
from builder.lock.resolve import resolve
from builder.lock.resolver import Resolver
from builder.manifest.model import Manifest
from builder.model.arch import Arch
from builder.plan.prepare import Request
from builder.store.cache import Cache
from builder.store.http import HttpClient
from tests.helpers import add_submodule, commit, context_files, git, make_repo
from tests.unit.plan.test_stage_contexts import MANIFEST


def bare(work: Path, bare_path: Path) -> None:
    git("clone", "-q", "--bare", str(work), str(bare_path), cwd=work.parent)


def unpacked_context(request: Request, tmp_path: Path) -> Path:
    """The lib stage's build context, unpacked; its src/ directory."""
    stage = chain.plan(request, print).stages["lib"]
    (tmp_path / "unpacked").mkdir()
    write_context(tmp_path / "unpacked", stage.dockerfile, stage.context, request.cache)
    return tmp_path / "unpacked" / "src"


def test_submodules_are_pinned_recursively_and_built_from_their_commits(tmp_path: Path) -> None:
    repos = tmp_path / "repos"
    repos.mkdir()
    inner_commit = make_repo(tmp_path / "inner", "inner v1")
    bare(tmp_path / "inner", repos / "inner.git")
    make_repo(tmp_path / "dep", "dep v1")
    dep_commit = add_submodule(tmp_path / "dep", f"file://{repos}/inner.git", "third_party/inner")
    bare(tmp_path / "dep", repos / "dep.git")
    make_repo(tmp_path / "lib", "lib v1")
    lib_commit = add_submodule(tmp_path / "lib", f"file://{repos}/dep.git", "3rdparty/dep", recorded="../dep.git")
    bare(tmp_path / "lib", repos / "lib.git")
    # The submodules' branches move on after the parent pinned them.
    for name in ("inner", "dep"):
        commit(tmp_path / name, f"{name} v2")
        git("push", "-q", str(repos / f"{name}.git"), "HEAD:main", cwd=tmp_path / name)

    stacks = tmp_path / "stacks"
    (stacks / "app").mkdir(parents=True)
    (stacks / "app" / "main.c").write_text("int main(void) { return 0; }\n")
    (stacks / "ctx.yaml").write_text(MANIFEST.replace("REPO", f"file://{repos}/lib.git"))
    loaded = manifest.load(stacks / "ctx.yaml")
    cache = Cache(tmp_path / "cache")
    pinned = resolve(loaded, Resolver(stacks, SiteConfig(), cache, HttpClient(), lambda _: None))

    source = pinned.component("lib").source.model_dump()
    assert source["commit"] == lib_commit
    assert source["submodules"] == [
        {
            "path": "3rdparty/dep",
            "url": f"file://{repos}/dep.git",  # ../dep.git read against the superproject's URL
            "commit": dep_commit,
            "submodules": [
                {
                    "path": "third_party/inner",
                    "url": f"file://{repos}/inner.git",
                    "commit": inner_commit,
                    "submodules": [],
                }
            ],
        }
    ]
    request = Request(loaded, stacks / "ctx.yaml", pinned, SiteConfig(), cache, Arch.X86_64)
    stage = chain.plan(request, print).stages["lib"]
    assert stage.inputs.context.sha256 != lib_commit  # the submodules' commits are part of the key
    files = context_files(stage.dockerfile, stage.context, cache)
    assert files["src/README"] == b"lib v1"
    assert files["src/3rdparty/dep/README"] == b"dep v1"
    assert files["src/3rdparty/dep/third_party/inner/README"] == b"inner v1"
    assert json.loads(json.dumps(pinned.model_dump(mode="json")))["components"][0]["source"]["submodules"]


def test_relative_submodule_urls_are_read_as_git_reads_them() -> None:
    from builder.inputs.submodules import join_url

    assert (
        join_url("https://github.com/tile-ai/tilelang-ascend.git", "../tvm.git") == "https://github.com/tile-ai/tvm.git"
    )
    assert join_url("https://h/a/b.git", "./c.git") == "https://h/a/b.git/c.git"
    assert join_url("git@github.com:org/repo.git", "../other.git") == "git@github.com:org/other.git"
    assert join_url("https://h/a.git", "https://elsewhere/x.git") == "https://elsewhere/x.git"


def test_keep_git_gives_a_checkout_that_works_without_network(tmp_path: Path) -> None:
    """With keep_git the context holds .git (shallow, tagged, submodules absorbed): git works offline in it."""
    repos = tmp_path / "repos"
    repos.mkdir()
    make_repo(tmp_path / "dep", "dep v1")
    bare(tmp_path / "dep", repos / "dep.git")
    make_repo(tmp_path / "lib", "lib v1")
    add_submodule(tmp_path / "lib", f"file://{repos}/dep.git", "3rdparty/dep", recorded="../dep.git")
    git("tag", "v1.2.3", cwd=tmp_path / "lib")
    bare(tmp_path / "lib", repos / "lib.git")
    stacks = tmp_path / "stacks"
    (stacks / "app").mkdir(parents=True)
    text = MANIFEST.replace("REPO", f"file://{repos}/lib.git").replace("ref: main}", "ref: v1.2.3, keep_git: true}")
    (stacks / "ctx.yaml").write_text(text)
    loaded = manifest.load(stacks / "ctx.yaml")
    cache = Cache(tmp_path / "cache")
    pinned = resolve(loaded, Resolver(stacks, SiteConfig(), cache, HttpClient(), lambda _: None))
    src = unpacked_context(Request(loaded, stacks / "ctx.yaml", pinned, SiteConfig(), cache, Arch.X86_64), tmp_path)
    assert (src / "3rdparty" / "dep" / "README").read_text() == "dep v1"
    assert (src / "3rdparty" / "dep" / ".git").is_file()  # absorbed into src/.git/modules
    offline = {"GIT_ALLOW_PROTOCOL": "", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    for args in (["submodule", "update", "--init", "--recursive"], ["describe", "--tags"], ["status", "--porcelain"]):
        run = subprocess.run(["git", *args], cwd=src, env=offline, capture_output=True, text=True)
        assert run.returncode == 0, (args, run.stderr)
        if args[0] == "describe":
            assert run.stdout.strip() == "v1.2.3"
        if args[0] == "status":
            assert run.stdout == ""
    assert str(cache.root) not in (src / ".git" / "config").read_text()  # no build-host paths


def test_the_cache_fetches_only_the_pinned_commit(tmp_path: Path) -> None:
    from builder.inputs import git as git_inputs

    work = tmp_path / "lib"
    first = make_repo(work, "v1")
    pinned = commit(work, "v2")
    git("checkout", "-q", "-b", "other", first, cwd=work)
    other = commit(work, "elsewhere")
    cache = Cache(tmp_path / "cache")
    store = git_inputs.mirror(f"file://{work}", pinned, cache)
    assert git("cat-file", "-t", pinned, cwd=store) == "commit"
    for absent in (first, other):  # history and other branches are not fetched
        assert subprocess.run(["git", "cat-file", "-e", absent], cwd=store).returncode != 0
    assert git_inputs.mirror(f"file://{work}", pinned, cache) == store  # present: no fetch again


def test_skipped_submodules_stay_out_of_the_lock_and_out_of_git_submodule_update(tmp_path: Path) -> None:
    """A nested submodule whose commit no mirror has (tvm's flashinfer under tilelang-ascend) is named
    with its full path; listed in skip_submodules it is neither locked, nor in the context, nor
    fetched by the build's own `git submodule update --init --recursive`."""
    repos = tmp_path / "repos"
    repos.mkdir()
    make_repo(tmp_path / "gone", "gone v1")
    bare(tmp_path / "gone", repos / "gone.git")
    make_repo(tmp_path / "dep", "dep v1")
    add_submodule(tmp_path / "dep", f"file://{repos}/gone.git", "3rdparty/flash")
    bare(tmp_path / "dep", repos / "dep.git")
    make_repo(tmp_path / "lib", "lib v1")
    add_submodule(tmp_path / "lib", f"file://{repos}/dep.git", "3rdparty/dep")
    add_submodule(tmp_path / "lib", f"file://{repos}/gone.git", "3rdparty/cuda")
    bare(tmp_path / "lib", repos / "lib.git")
    subprocess.run(["rm", "-rf", str(repos / "gone.git")], check=True)
    stacks = tmp_path / "stacks"
    (stacks / "app").mkdir(parents=True)
    source = f"file://{repos}/lib.git"

    def lock_with(skip: str) -> tuple[Manifest, Lock]:
        text = MANIFEST.replace("REPO", source).replace("ref: main}", f"ref: main, keep_git: true{skip}}}")
        (stacks / "ctx.yaml").write_text(text)
        loaded = manifest.load(stacks / "ctx.yaml")
        return loaded, resolve(loaded, Resolver(stacks, SiteConfig(), cache, HttpClient(), lambda _: None))

    cache = Cache(tmp_path / "cache")
    with pytest.raises(SourceError) as missing:
        lock_with("")
    assert f"submodule 3rdparty/cuda (file://{repos}/gone.git) at " in str(missing.value)
    assert "or list the path in skip_submodules if the build does not use it" in str(missing.value)
    with pytest.raises(SourceError, match="submodule 3rdparty/dep/3rdparty/flash "):
        lock_with(", skip_submodules: [3rdparty/cuda]")
    with pytest.raises(SourceError, match=r"skip_submodules: 3rdparty/typo is not a submodule of file://"):
        lock_with(", skip_submodules: [3rdparty/cuda, 3rdparty/dep/3rdparty/flash, 3rdparty/typo]")
    loaded, pinned = lock_with(", skip_submodules: [3rdparty/cuda, 3rdparty/dep/3rdparty/flash]")
    locked = pinned.component("lib").source
    assert isinstance(locked, LockedGit)
    assert locked.skip_submodules == ["3rdparty/cuda", "3rdparty/dep/3rdparty/flash"]
    assert [(s.path, [n.path for n in s.submodules]) for s in locked.submodules] == [("3rdparty/dep", [])]

    src = unpacked_context(Request(loaded, stacks / "ctx.yaml", pinned, SiteConfig(), cache, Arch.X86_64), tmp_path)
    offline = {"GIT_ALLOW_PROTOCOL": "", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    run = subprocess.run(
        ["git", "submodule", "update", "--init", "--recursive"], cwd=src, env=offline, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert (src / "3rdparty" / "dep" / "README").read_text() == "dep v1"
    assert list((src / "3rdparty" / "cuda").iterdir()) == []
    assert list((src / "3rdparty" / "dep" / "3rdparty" / "flash").iterdir()) == []


def test_a_submodule_that_cannot_be_fetched_is_named_without_its_credentials(tmp_path: Path) -> None:
    from builder.inputs.submodules import resolve as resolve_submodules

    make_repo(tmp_path / "lib", "lib v1")
    add_submodule(tmp_path / "lib", f"file://{tmp_path}/lib", "3rdparty/x", "https://user:s3cret@127.0.0.1:1/x.git")
    with pytest.raises(SourceError) as failed:
        resolve_submodules(
            f"file://{tmp_path}/lib",
            f"file://{tmp_path}/lib",
            git("rev-parse", "HEAD", cwd=tmp_path / "lib"),
            Cache(tmp_path / "c"),
            SiteConfig(),
        )
    message = str(failed.value)
    assert message.startswith("submodule 3rdparty/x (https://") and "cannot be fetched from" in message
    assert "s3cret" not in message


def test_a_resealed_submodule_cannot_point_outside_the_checkout() -> None:
    source = {"kind": "git", "url": "https://h/r.git", "ref": "main", "commit": "1" * 40}
    sub = {"path": "/etc/cron.d", "url": "https://evil/x.git", "commit": "2" * 40}
    with pytest.raises(ValueError, match="must be a relative path"):
        LockedGit.model_validate({**source, "submodules": [sub]})
    for bad in ("../../x", "a/../../b", "./x", "a//b"):
        with pytest.raises(ValueError):
            LockedGit.model_validate({**source, "submodules": [{**sub, "path": bad}]})
