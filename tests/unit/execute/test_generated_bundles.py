"""Hypothesis over air-gap bundles and .gitmodules files (issue 23): structured mutations of a real
bundle's bundle.json and of its directory layout, imported in-process into a fresh cache.

Every case ends in an import or one clear line (InputError / StackbuildError), never another
exception; no file outside the cache is written or copied into it (the host's secret is never in
the cache); nothing is executed (a marker file). The git stores are made once per module and
each case mutates around them."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder.execute.bundle import import_bundle
from builder.inputs import git
from builder.inputs.site import SiteConfig
from builder.model.errors import StackbuildError
from builder.store.cache import Cache
from tests.helpers import fuzz_cases, make_repo
from tests.helpers import git as run_git
from tests.mutations import NASTY, leaf, leaf_paths, mutate

STORE = "git/0123456789abcdef.git"
BLOB = b"a package\n"
BLOB_SHA = hashlib.sha256(BLOB).hexdigest()
SECRET = b"host secret 5b1d\n"
CASES = settings(
    max_examples=fuzz_cases(1000),  # a group: 2,000 cases in all on CI
    deadline=None,  # a case that imports runs git a few times: slow under load, never stuck
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


LOCK = b'{"lock_version": 2}\n'
# bundle.json as vendor writes it; {commit}, {secret}, {marker} and {repo} are the host's, filled in per case.
TEMPLATE: dict[str, Any] = {
    "format": 1,
    "stack": "s",
    "lock_sha256": "a" * 64,
    "files": {
        "lock.json": {"sha256": hashlib.sha256(LOCK).hexdigest(), "size": len(LOCK)},
        f"blobs/{BLOB_SHA}": {"sha256": BLOB_SHA, "size": len(BLOB), "what": "x86_64 toolkit"},
    },
    "git": [{"url": "https://example.invalid/lib.git", "commit": "{commit}", "path": STORE}],
}
HOSTILE = [
    *NASTY,
    "--upload-pack=touch${IFS}{marker}",
    "--file={secret}",
    "{secret}",
    "../../../..{secret}",
    "/dev/zero",
    f"blobs/{'b' * 64}",
    f"blobs/{BLOB_SHA}",
    "git/../../../x.git",
    "git/fedcba9876543210.git",
    "0" * 40,
    "A" * 40,
    "{commit}",
    -1,
    2**40,
    "file://{repo}",
]
EDITS = st.lists(
    st.tuples(
        st.sampled_from(list(leaf_paths(TEMPLATE))),
        st.sampled_from(["set", "delete", "add"]),
        st.one_of(st.sampled_from(HOSTILE), leaf),
    ),
    min_size=1,
    max_size=3,
)


class Host:
    """What the cases attack: a host repository, a secret file, a marker path; and the good bundle."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.commit = make_repo(base / "work")
        self.repo = base / "host.git"
        run_git("clone", "-q", "--bare", str(base / "work"), str(self.repo), cwd=base)
        self.secret = base / "secret"
        self.secret.write_bytes(SECRET)
        self.marker = base / "MARKER"
        self.bundle = base / "bundle"
        (self.bundle / "blobs").mkdir(parents=True)
        (self.bundle / "blobs" / BLOB_SHA).write_bytes(BLOB)
        run_git("clone", "-q", "--bare", str(self.repo), str(self.bundle / STORE), cwd=base)
        shutil.rmtree(self.bundle / STORE / "hooks")  # fewer files to copy into each layout
        (self.bundle / "lock.json").write_bytes(LOCK)

    def realised(self, manifest: Any) -> str:
        """bundle.json's text with the placeholders naming this host's commit, files and repository."""
        text = json.dumps(manifest, default=str)
        places = {"commit": self.commit, "secret": str(self.secret), "marker": str(self.marker), "repo": str(self.repo)}
        for name, value in places.items():
            text = text.replace(f"{{{name}}}", value)
        return text


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Host:
    return Host(tmp_path_factory.mktemp("host"))


LAYOUTS = [
    "as made",
    "blob links to the secret",
    "blob is a fifo",
    "blob is a directory",
    "blob missing",
    "store links to the host repository",
    "store borrows the host's objects",
    "store config runs a command",
    "git is a link",
]


def lay_out(host: Host, bundle: Path, layout: str) -> None:
    blob, store = bundle / "blobs" / BLOB_SHA, bundle / STORE
    if layout.startswith("blob"):
        blob.unlink()
        if layout == "blob links to the secret":
            blob.symlink_to(host.secret)
        elif layout == "blob is a fifo":
            os.mkfifo(blob)
        elif layout == "blob is a directory":
            blob.mkdir()
    elif layout == "store links to the host repository":
        shutil.rmtree(store)
        store.symlink_to(host.repo)
    elif layout == "store borrows the host's objects":
        shutil.rmtree(store / "objects")
        (store / "objects" / "info").mkdir(parents=True)
        (store / "objects" / "info" / "alternates").write_text(f"{host.repo}/objects\n")
    elif layout == "store config runs a command":
        (store / "config").write_text(
            f"[core]\n\tfsmonitor = touch {host.marker}\n[uploadpack]\n\tpackObjectsHook = touch {host.marker}\n"
        )
    elif layout == "git is a link":
        shutil.rmtree(bundle / "git")
        (bundle / "git").symlink_to(host.repo.parent)


@contextlib.contextmanager
def laid_out(host: Host, layout: str) -> Iterator[tuple[Path, Cache]]:
    """The bundle of that layout (each made once: an import only reads a bundle) and a new cache."""
    bundle = host.base / "layouts" / layout.replace(" ", "-") / "bundle"
    if not bundle.parent.exists():
        shutil.copytree(host.bundle, bundle, symlinks=True)
        lay_out(host, bundle, layout)
    with tempfile.TemporaryDirectory(dir=host.base) as tmp:
        yield bundle, Cache(Path(tmp) / "cache")


def cache_holds_the_secret(cache: Cache) -> bool:
    return (
        any(p.is_file() and p.read_bytes() == SECRET for p in cache.root.rglob("*")) if cache.root.exists() else False
    )


# Two groups, so that the fast tier's two workers share the cases.
LAYOUT_GROUPS = {"manifest and blobs": LAYOUTS[:5], "git stores": LAYOUTS[5:]}


@pytest.mark.parametrize("group", sorted(LAYOUT_GROUPS))
@CASES
@given(edits=EDITS, drawn=st.integers(0, 4))
def test_fuzz_bundles_through_import(host: Host, group: str, edits: list[Any], drawn: int) -> None:
    layouts = LAYOUT_GROUPS[group]
    layout = layouts[drawn % len(layouts)]
    with laid_out(host, layout) as (bundle, cache):
        (bundle / "bundle.json").write_text(host.realised(mutate(TEMPLATE, edits)))
        try:
            import_bundle(bundle, SiteConfig(), cache, lambda _: None)
        except StackbuildError as err:  # InputError included: one clear line
            assert "\n" not in str(err) and "Traceback" not in str(err), err
        assert not host.marker.exists(), f"{layout}, {edits}: a command ran"
        assert not cache_holds_the_secret(cache), f"{layout}, {edits}: a host file entered the cache"
        assert host.secret.read_bytes() == SECRET


GITMODULES = [
    '[submodule "a"]\n\tpath = a\n\turl = ../a.git\n',
    "[include]\n\tpath = {secret}\n",
    '[includeIf "gitdir:/"]\n\tpath = {secret}\n',
    '[submodule "--file={secret}"]\n\tpath = -x\n\turl = --upload-pack=touch {marker}\n',
    '[submodule "b"]\n\tpath = ../../b\n\turl = file:///etc\n',
    "[submodule]\n\tpath\n",
    "\x00\xff",
    "[core]\n\tfsmonitor = touch {marker}\n",
]


@settings(
    max_examples=fuzz_cases(300),
    deadline=2000,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(parts=st.lists(st.one_of(st.sampled_from(GITMODULES), st.text(max_size=30)), min_size=1, max_size=4))
def test_fuzz_gitmodules_reads_no_host_file_and_runs_nothing(host: Host, parts: list[str]) -> None:
    (host.secret.parent / "inc").write_text(f'[submodule "leak"]\n\tpath = leak\n\turl = {SECRET.decode().strip()}\n')
    text = "".join(parts).replace("{secret}", str(host.secret.parent / "inc")).replace("{marker}", str(host.marker))
    try:
        found = git.parse_gitmodules(text)
    except git.SourceError as err:
        assert "\n" not in str(err)
        return
    assert "leak" not in found and all("host secret" not in v for e in found.values() for v in e.values())
    assert not host.marker.exists()
