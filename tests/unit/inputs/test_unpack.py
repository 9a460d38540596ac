"""A build context is written without ever following a link: an archive cannot steer a write (or a
chmod) outside the context, whatever its members (issue 48 item 2), and a cache blob enters a
context only while its content is still its name."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder.inputs.contexts import FileItem, GitTree, LocalTree, write_context
from builder.inputs.unpack import unpack
from builder.model.errors import StackbuildError
from builder.store.cache import Cache
from tests.helpers import context_files, fuzz_cases

# CVE-2025-4517: a chain of 16 links, each to a 247-character directory, makes the path behind it
# longer than PATH_MAX, where os.path.realpath (and so tarfile's filters) stops resolving links.
CHAIN_DIRECTORY = "d" * 247
CHAIN_STEPS = "efghijklmnopqrst"  # each after CHAIN_DIRECTORY in git's order: the directory is written first
CHAIN_END = "/".join(CHAIN_STEPS) + "/" + "z" * 254  # really the chain's start, which realpath cannot see


def _chain_members() -> list[tuple[str, bytes, str]]:
    """(name, tar type, link target) of the chain, then of `escape`: a link up out of where it lies
    that realpath takes for a directory deep inside."""
    members, path = [], ""
    for step in CHAIN_STEPS:
        members += [
            (f"{path}{CHAIN_DIRECTORY}", tarfile.DIRTYPE, ""),
            (f"{path}{step}", tarfile.SYMTYPE, CHAIN_DIRECTORY),
        ]
        path += f"{CHAIN_DIRECTORY}/"
    members.append((CHAIN_END, tarfile.SYMTYPE, "../" * len(CHAIN_STEPS)))
    members.append(("escape", tarfile.SYMTYPE, f"{CHAIN_END}/.."))
    return members


def _snapshot(root: Path, leaving_out: Path) -> dict[str, tuple[int, int, bytes | str]]:
    """Every entry under root (and root) but leaving_out's: its mode, its time, its content or target."""
    found: dict[str, tuple[int, int, bytes | str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if Path(dirpath, d) != leaving_out]
        for path in [Path(dirpath), *(Path(dirpath, n) for n in dirnames + filenames)]:
            status = path.lstat()
            content: bytes | str = os.readlink(path) if path.is_symlink() else b""
            if path.is_file() and not path.is_symlink():
                content = path.read_bytes()
            found[str(path)] = (status.st_mode, status.st_mtime_ns, content)
    return found


def _outside_and_context(top: Path) -> tuple[Path, Path]:
    """top/root holding outside/ (a file and a directory a write through a link would reach) and
    ctx/, empty: the context; root and ctx."""
    root, context = top / "root", top / "root" / "ctx"
    (root / "outside" / "dir").mkdir(parents=True)
    (root / "outside" / "victim").write_text("before\n")
    for path, mode in ((root, 0o700), (root / "outside", 0o700), (root / "outside" / "victim", 0o600)):
        path.chmod(mode)
    context.mkdir()
    return root, context


COMPONENTS = ["a", "b", "escape", "x" * 200, ".", "..", CHAIN_DIRECTORY]
TARGETS = [
    "a",
    "b/a",
    ".",
    "..",
    "../..",
    "../outside",
    "../outside/victim",
    "../../root/outside/dir",
    "../" * 30 + "tmp",
    "{root}",
    "{root}/outside",
    "{root}/outside/victim",
    "x" * 200,
    f"{CHAIN_END}/../..",
    CHAIN_END,
]
KINDS = [
    tarfile.REGTYPE,
    tarfile.DIRTYPE,
    tarfile.SYMTYPE,
    tarfile.LNKTYPE,
    tarfile.CHRTYPE,
    tarfile.BLKTYPE,
    tarfile.FIFOTYPE,
]
names = st.builds(
    lambda absolute, parts: ("/" if absolute else "") + "/".join(parts),
    st.booleans(),
    st.lists(st.sampled_from(COMPONENTS), min_size=1, max_size=4),
)
members = st.lists(
    st.tuples(names, st.sampled_from(KINDS), st.sampled_from(TARGETS), st.sampled_from([0o644, 0o755, 0o777, 0o4755])),
    max_size=12,
)


def _archive(path: Path, chain: bool, drawn: list[tuple[str, bytes, str, int]], root: Path) -> None:
    listed = [(n, k, t, 0o755) for n, k, t in _chain_members()] if chain else []
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, kind, target, mode in listed + drawn:
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.linkname = kind, mode, target.replace("{root}", str(root))
            data = f"written as {name}\n".encode() if kind == tarfile.REGTYPE else b""
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@settings(
    max_examples=fuzz_cases(500),
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(chain=st.booleans(), drawn=members)
def test_no_archive_writes_or_changes_anything_outside_the_context(
    chain: bool, drawn: list[tuple[str, bytes, str, int]]
) -> None:
    with tempfile.TemporaryDirectory() as top:
        root, context = _outside_and_context(Path(top))
        _archive(Path(top) / "members.tar", chain, drawn, root)
        before = _snapshot(root, context)
        try:
            unpack(Path(top) / "members.tar", context)
        except StackbuildError as refused:
            assert "\n" not in str(refused)
        assert _snapshot(root, context) == before


def _git(repo: Path, *args: str, stdin: str = "") -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, input=stdin, capture_output=True, text=True, check=True
    ).stdout.strip()


Entries = list[tuple[str, str, "str | Entries"]]


def _mktree(repo: Path, entries: Entries) -> str:
    """A git tree of (name, "file" | "link" | "tree", content or target or entries): `git mktree`
    writes a name twice if told to (git fsck: duplicateEntries)."""
    lines = []
    for name, kind, content in entries:
        if isinstance(content, list):
            lines.append(f"040000 tree {_mktree(repo, content)}\t{name}")
        else:
            blob = _git(repo, "hash-object", "-w", "--stdin", stdin=content)
            lines.append(f"{'120000' if kind == 'link' else '100644'} blob {blob}\t{name}")
    return _git(repo, "mktree", stdin="".join(f"{line}\n" for line in lines))


def _repository(path: Path, entries: Entries) -> str:
    """A repository at path whose branch main is one commit of a tree of entries; the commit."""
    _git(path.parent, "init", "-q", "--bare", str(path))
    commit = _git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit-tree", "-m", "t", _mktree(path, entries))
    _git(path, "update-ref", "refs/heads/main", commit)
    return commit


def _chain_tree(depth: int = 0) -> Entries:
    if depth == len(CHAIN_STEPS):
        return [("kept", "file", "")]
    return [(CHAIN_DIRECTORY, "tree", _chain_tree(depth + 1)), (CHAIN_STEPS[depth], "link", CHAIN_DIRECTORY)]


def _through_chain(steps: str) -> Entries:
    if not steps:
        return [("z" * 254, "link", "../" * len(CHAIN_STEPS))]
    return [(steps[0], "tree", _through_chain(steps[1:]))]


DUPLICATE_ENTRIES: dict[str, Entries] = {
    # A link and a directory of one name: git archive lists the directory src/a (and src/a/planted) after the link.
    "a link out": [("a", "link", "../../outside"), ("a", "tree", [("planted", "file", "planted\n")])],
    # Through the chain, `escape` (a link to ctx/src/../..: root) passes tarfile's check.
    "a long link chain": [
        *_chain_tree(),
        *_through_chain(CHAIN_STEPS),
        ("escape", "link", f"{CHAIN_END}/../.."),
        ("escape", "tree", [("planted", "file", "planted\n")]),
    ],
}


@pytest.mark.parametrize("entries", DUPLICATE_ENTRIES.values(), ids=DUPLICATE_ENTRIES.keys())
def test_a_git_tree_with_duplicate_entries_is_refused_and_writes_nothing_outside(
    tmp_path: Path, entries: Entries
) -> None:
    commit = _repository(tmp_path / "repo.git", entries)
    root, context = _outside_and_context(tmp_path)
    before = _snapshot(root, context)
    # git's object checks refuse this tree as it is fetched (test_git_object_checks.py); with that check
    # let through, as a site's fsck_skip would, the writer still refuses it.
    tree = GitTree("src/", f"file://{tmp_path / 'repo.git'}", commit, skipped_checks=("duplicateEntries",))
    with pytest.raises(StackbuildError, match=r"^build context member 'src/[a-z]+' is a directory over a link"):
        write_context(context, "FROM scratch\n", [tree], Cache(tmp_path / "cache"))
    assert _snapshot(root, context) == before


def test_a_cache_file_replaces_a_trees_link_of_its_name_and_is_never_written_through(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    blob = cache.blob(cache.add_file(_written(tmp_path / "package", b"package\n")))
    root, context = _outside_and_context(tmp_path)
    tree = tmp_path / "tree"
    (tree / "packages").mkdir(parents=True)
    (tree / "packages" / "p.run").symlink_to(root / "outside" / "victim")
    (tree / "linked").symlink_to(root / "outside" / "victim")
    before = _snapshot(root, context)
    written = context_files("FROM scratch\n", [LocalTree("", tree), FileItem("packages/p.run", lambda: blob)], cache)
    assert written["packages/p.run"] == b"package\n"
    with pytest.raises(StackbuildError, match=r"^build context member 'linked/p.run' would be written through"):
        write_context(context, "FROM scratch\n", [LocalTree("", tree), FileItem("linked/p.run", lambda: blob)], cache)
    assert _snapshot(root, context) == before


def _written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_a_local_trees_hard_linked_files_are_each_written_whole(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    os.link(_written(tree / "one", b"same inode\n"), tree / "two")
    written = context_files("FROM scratch\n", [LocalTree("src/", tree)], Cache(tmp_path / "cache"))
    assert written["src/one"] == written["src/two"] == b"same inode\n"


def test_a_cache_blob_whose_content_is_not_its_name_is_refused_naming_it(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    blob = cache.blob(cache.add_file(_written(tmp_path / "package", b"package\n")))
    assert context_files("FROM scratch\n", [FileItem("p.run", lambda: blob)], cache)["p.run"] == b"package\n"
    blob.write_bytes(b"written through a link since\n")
    with pytest.raises(
        StackbuildError, match=rf"^cached file {blob} holds sha256 [0-9a-f]{{64}}, not its name: .*gc --verify"
    ):
        context_files("FROM scratch\n", [FileItem("p.run", lambda: blob)], cache)
