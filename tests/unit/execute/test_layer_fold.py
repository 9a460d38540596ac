"""A stage's own small layers folded into one (builder.execute.layer_fold) that gives the files they
give over what lies below: whiteouts, opaque directories and hard links kept, each layer weighed by what
is written of it, each fold under a name of its own; the components and finals fold, the stages others
are built FROM do not."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import tempfile
from pathlib import Path
from typing import IO

import pytest

from builder.execute.layer_fold import FOLD_BELOW, fold_groups, folded
from builder.execute.layer_read import Member, spooled
from builder.execute.normalise import normalise
from builder.execute.stage_normalise import folds
from tests.golden_plan import golden_plan
from tests.layer_tars import EPOCH, LATER, OWN, PARENT, layer, saved, sent_layers


def members(data: bytes) -> list[Member]:
    """A layer tar's members, each opened from the tar's bytes."""
    return list(spooled(io.BytesIO(data), tempfile.TemporaryFile()))


def tree(entries: list[Member]) -> dict[str, tuple[str, bytes | str | None]]:
    """name -> (type, data or link target) of members."""
    found: dict[str, tuple[str, bytes | str | None]] = {}
    for member, opener in entries:
        name = member.name.removeprefix("./")
        if member.islnk():
            found[name] = ("link", member.linkname)
        elif member.isfile() and opener is not None:
            with opener() as data:
                found[name] = ("file", data.read(member.size))
        else:
            found[name] = ("dir" if member.isdir() else "file", None)
    return found


def hard_linked(entries: list[tuple[str, bytes | None, str | None]]) -> bytes:
    """A layer tar of (name, data or None for a directory, the file it is a hard link to)."""
    links = {name: target for name, _, target in entries if target is not None}
    return layer([(name, data, LATER) for name, data, _ in entries], links=links)


def test_layers_folded_into_one_give_the_files_they_give_over_what_lies_below() -> None:
    first = hard_linked(
        [
            ("opt/d", None, None),
            ("opt/d/a", b"a", None),
            ("opt/x", b"x", None),
            ("opt/hl", None, "opt/x"),
            ("opt/keep", b"keep", None),
            ("etc/.wh.below", b"", None),
        ]
    )
    second = hard_linked(
        [
            ("opt/.wh.d", b"", None),
            ("opt/x", b"new x", None),
            ("etc/below", b"made again", None),
            ("opt/.wh.keep", b"", None),
        ]
    )
    third = hard_linked([("opt/d", None, None), ("opt/d/b", b"b", None), ("usr/.wh..wh..opq", b"", None)])
    files = tree(folded([members(first), members(second), members(third)]))
    # A whiteout removes what the layers before it added, and stays for what lies below them.
    assert "opt/d/a" not in files and "opt/keep" not in files and files["opt/.wh.keep"] == ("file", b"")
    # A directory made again after a whiteout hides what lies below it (opaque), keeping its own files.
    assert files["opt/d/.wh..wh..opq"] == ("file", None) and files["opt/d/b"] == ("file", b"b")
    assert "opt/.wh.d" not in files
    # A file made where a whiteout was: the file, no whiteout.
    assert files["etc/below"] == ("file", b"made again") and "etc/.wh.below" not in files
    # A hard link whose file a later layer replaced keeps the data it had, as a file of its own.
    assert files["opt/hl"] == ("file", b"x") and files["opt/x"] == ("file", b"new x")
    assert files["usr/.wh..wh..opq"][0] == "file"  # an opaque marker of the last layer stays
    # Two links to a file replaced later stay linked to each other.
    linked = hard_linked([("opt/x", b"x", None), ("opt/y", None, "opt/x"), ("opt/z", None, "opt/x")])
    relinked = tree(folded([members(linked), members(hard_linked([("opt/x", b"new x", None)]))]))
    assert relinked == {"opt/x": ("file", b"new x"), "opt/y": ("file", b"x"), "opt/z": ("link", "opt/y")}
    # A hard link whose file stays is still a link; a layer alone is what it was.
    kept = tree(folded([members(hard_linked([("a", b"a", None), ("b", None, "a")])), members(third)]))
    assert kept["b"] == ("link", "a")


def test_small_layers_are_folded_together_and_a_large_one_stays_alone() -> None:
    def sized(size: int) -> list[Member]:
        info = tarfile.TarInfo("f")
        info.size = size
        return [(info, None)]

    small, large = sized(10), sized(FOLD_BELOW)
    assert fold_groups([small, small, large, small, small, large, large]) == [[0, 1], [2], [3, 4], [5], [6]]


def test_a_folded_image_has_one_layer_for_its_own_and_a_history_that_names_as_many(tmp_path: Path) -> None:
    layers = [PARENT, *OWN]
    digests = [f"sha256:{hashlib.sha256(data).hexdigest()}" for data in layers]
    history: list[dict[str, object]] = [{"created_by": f"step {n}"} for n in range(4)]
    history.insert(2, {"created_by": "ENV x=y", "empty_layer": True})
    config = {"created": "x", "history": history, "rootfs": {"type": "layers", "diff_ids": digests}}
    normal = normalise(saved(layers, config), frozenset(digests[:1]), EPOCH, tmp_path, fold=True)
    (folded_name,) = sent_layers(normal)  # one layer, named by the three folded into it
    assert folded_name == f"{hashlib.sha256(' '.join(digests[1:]).encode()).hexdigest()}/layer.tar"
    written = json.loads(normal.config)
    assert len(written["rootfs"]["diff_ids"]) == 2
    assert [bool(entry.get("empty_layer")) for entry in written["history"]] == [False, True, True, True, False]
    with tarfile.open(fileobj=io.BytesIO(b"".join(normal.archive()))) as tar:
        layer_tar = tar.extractfile(folded_name)
        assert layer_tar is not None
        with tarfile.open(fileobj=layer_tar) as folded_layer:
            assert folded_layer.getnames() == ["opt/0", "opt/1", "opt/2"]


def test_what_a_layer_weighs_for_folding_is_what_is_written_of_it() -> None:
    """A layer whose dropped files (a log, /tmp) would take it past FOLD_BELOW is folded all the same:
    their size may differ from one build to the next, and the image with it."""

    def sized(*files: tuple[str, int]) -> list[Member]:
        found: list[Member] = []
        for name, size in files:
            info = tarfile.TarInfo(name)
            info.size = size
            found.append((info, None))
        return found

    small = sized(("opt/a", 10))
    logged = sized(("opt/b", FOLD_BELOW - 100), ("var/log/build.log", 200), ("tmp/x", 200), ("opt/.wh.c", 200))
    assert fold_groups([small, logged, small]) == [[0, 1, 2]]
    assert fold_groups([small, sized(("opt/b", FOLD_BELOW)), small]) == [[0], [1], [2]]


def names_in(data: IO[bytes] | None) -> list[str]:
    assert data is not None
    with tarfile.open(fileobj=data) as tar:
        return tar.getnames()


def test_a_layer_sent_alone_and_in_a_fold_go_under_names_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same built layer folded with another and sent alone: two layers, each under its own name."""
    monkeypatch.setattr("builder.execute.layer_fold.FOLD_BELOW", 20)
    small, large = layer([("opt/s", b"s", LATER)]), layer([("opt/l", b"l" * 40, LATER)])
    layers = [PARENT, OWN[0], small, large, small]
    digests = [f"sha256:{hashlib.sha256(data).hexdigest()}" for data in layers]
    config = {"created": "x", "history": [], "rootfs": {"type": "layers", "diff_ids": digests}}
    normal = normalise(saved(layers, config), frozenset(digests[:1]), EPOCH, tmp_path, fold=True)
    with tarfile.open(fileobj=io.BytesIO(b"".join(normal.archive()))) as tar:
        names = [name for name in tar.getnames() if name.endswith("layer.tar")]
        contents = [names_in(tar.extractfile(name)) for name in names]
    assert len(set(names)) == 3
    assert contents == [["opt/0", "opt/s"], ["opt/l"], ["opt/s"]]
    assert len(json.loads(normal.config)["rootfs"]["diff_ids"]) == 4


def test_a_file_where_a_directory_was_implied_drops_what_was_under_it() -> None:
    below = hard_linked([("opt/x/a", b"a", None)])  # no entry of its own for opt/x
    above = hard_linked([("opt/x", b"a file now", None)])
    assert tree(folded([members(below), members(above)])) == {"opt/x": ("file", b"a file now")}


def test_components_and_final_images_fold_and_the_stages_others_are_built_from_do_not() -> None:
    golden = golden_plan()
    assert {name for name, stage in golden.stages.items() if folds(stage)} == {
        name for name, stage in golden.stages.items() if stage.kind not in ("base", "toolkit")
    }
    assert folds(golden.stages["devel-image"]) and not folds(golden.stages["toolkit"])
    for stage in golden.order():  # nothing is built FROM a stage that folds
        assert all(child.copies_only(stage.name) for child in golden.children(stage.name)) or not folds(stage)
