"""A stage's build context: a git component's is its tree at the locked commit, nothing else; a path
component's leaves out what a local build left (build/)."""

from pathlib import Path

import pytest

from builder import manifest
from builder.execute import chain
from builder.inputs.site import SiteConfig
from builder.lock.resolve import resolve
from builder.lock.resolver import Resolver
from builder.model.arch import Arch
from builder.plan.plan_model import Stage
from builder.plan.prepare import Request
from builder.store.cache import Cache
from builder.store.http import HttpClient
from tests.helpers import commit, context_files, make_repo

MANIFEST = """\
schema: 1
name: ctx
toolkit:
  vendor: cpusim
  version: 8.3.RC1
  chip: 910b
  packages:
    toolkit:
      x86_64: {file: tk.run, generate: "printf tk > {output_dir}/tk.run"}
host: {driver: none}
platform: {os: debian, os_version: "12", python: "3.11", architectures: [x86_64]}
base: {image: "debian@sha256:1111111111111111111111111111111111111111111111111111111111111111"}
components:
  - id: lib
    source: {git: "REPO", ref: main}
  - id: app
    source: {path: app}
smoke: {command: "true", expect: ""}
"""


def context_of(stage: Stage, cache: Cache) -> dict[str, bytes]:
    return context_files(stage.dockerfile, stage.context, cache)


def test_contexts_hold_only_the_pinned_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = Cache(tmp_path / "cache")
    repo = tmp_path / "lib"
    locked_commit = make_repo(repo, "locked content")
    stacks = tmp_path / "stacks"
    (stacks / "app" / "build").mkdir(parents=True)
    (stacks / "app" / "main.c").write_text("int main(void) { return 0; }\n")
    (stacks / "app" / "build" / "stale.o").write_text("left over from a local build")
    (stacks / "ctx.yaml").write_text(MANIFEST.replace("REPO", f"file://{repo}"))
    loaded = manifest.load(stacks / "ctx.yaml")
    pinned = resolve(loaded, Resolver(stacks, SiteConfig(), cache, HttpClient(), lambda _: None))
    commit(repo, "moved on")  # the branch moves after the lock
    request = Request(loaded, stacks / "ctx.yaml", pinned, SiteConfig(), cache, Arch.X86_64)
    staged = chain.plan(request, print)

    files = context_of(staged.stages["lib"], cache)
    assert files["src/README"] == b"locked content"
    assert files["Dockerfile"].decode() == staged.stages["lib"].dockerfile
    assert staged.stages["lib"].inputs.context.sha256 == locked_commit

    assert sorted(context_of(staged.stages["app"], cache)) == ["Dockerfile", "src/main.c"]  # build/ never goes in
    assert context_of(staged.stages["toolkit"], cache)["packages/tk.run"] == b"tk"
