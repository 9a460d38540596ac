"""What a built layer was rewritten to is remembered: a rebuild whose builder reused its bottom steps
sends only the layers from the first changed step up, and gives the image sending them all gives.
The components' install listings are remembered by image id the same way. A stage's own small
layers are folded into one that gives the same files."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO

import pytest

from builder.engine import NO_DEVICES, EngineError, RunResult
from builder.engine.overlay import chain_ids, held_layers
from builder.execute.image_load import Normalised
from builder.execute.layer_fold import FOLD_BELOW, fold_groups, folded
from builder.execute.layer_read import Member, spooled
from builder.execute.normalise import normalise
from builder.execute.stage_checks import _listed
from builder.execute.stage_log import StageLog
from builder.execute.stage_normalise import _known, _remember, _sent_from_data_root, folds
from builder.store.cache import Cache
from tests.fake_engine import FakeEngine
from tests.golden_plan import golden_plan
from tests.unit.engine.test_overlay import data_root
from tests.unit.execute.test_normalise import EPOCH, LATER, layer, saved

PARENT = layer([("base", b"base", EPOCH - 1)])
OWN = [layer([(f"opt/{n}", bytes([n]) * 10, LATER)]) for n in range(3)]


def built(own: Sequence[bytes], tmp_path: Path) -> Normalised:
    """An image of PARENT and own layers, normalised through docker save's path (every own layer sent)."""
    layers = [PARENT, *own]
    digests = [f"sha256:{hashlib.sha256(data).hexdigest()}" for data in layers]
    config = {"created": "x", "history": [], "rootfs": {"type": "layers", "diff_ids": digests}}
    scratch = tmp_path / f"scratch-{len(list(tmp_path.iterdir()))}"
    scratch.mkdir()
    return normalise(saved(layers, config), frozenset(digests[:1]), EPOCH, scratch)


def sent_layers(normal: Normalised) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(b"".join(normal.archive()))) as tar:
        return [name for name in tar.getnames() if name.endswith("layer.tar")]


class Holding(FakeEngine):
    """An engine whose data root holds these layers, each on the ones before it."""

    def __init__(self, layers: list[str], refuse_first_load: bool = False) -> None:
        super().__init__()
        self.layers, self.refuse_first_load = layers, refuse_first_load
        self.asked: list[list[str]] = []

    def held(self, diff_ids: list[str]) -> int:
        self.asked.append(list(diff_ids))
        held = 0
        for asked, holds in zip(diff_ids, self.layers, strict=False):
            if asked != holds:
                break
            held += 1
        return held

    def load(self, archive: Iterable[bytes]) -> None:
        if self.refuse_first_load and not self.loaded:
            self.loaded.append(b"refused")
            raise EngineError("open /var/lib/docker/tmp/docker-import-1/abc/layer.tar: no such file or directory")
        super().load(archive)


def test_layers_held_as_rewritten_before_are_neither_read_nor_sent_and_the_image_is_the_same(tmp_path: Path) -> None:
    every = built(OWN, tmp_path)
    sent_layers(every)  # the diff ids are known once sent
    again = built(OWN, tmp_path).known({1: every.diff_ids[1], 2: every.diff_ids[2]})
    assert sent_layers(again) == [f"{3:064x}/layer.tar"]
    assert again.image_id == every.image_id


def test_a_rebuild_sends_its_layers_from_the_first_one_not_remembered_up(tmp_path: Path) -> None:
    """Remembered and held: not sent. Above the first layer not remembered (a changed step), every layer
    is sent, even one remembered (the engine holds it on other layers below)."""
    cache = Cache(tmp_path / "cache")
    first = built(OWN, tmp_path)
    sent_layers(first)
    _remember(cache, first)
    changed = [OWN[0], layer([("opt/new", b"new", LATER)]), OWN[2]]
    rebuilt = _known(Holding(first.diff_ids), cache, built(changed, tmp_path))
    assert [sent.index for sent in rebuilt.sent] == [2, 3]
    assert rebuilt.diff_ids[1] == first.diff_ids[1]
    # The same layers with the engine holding fewer: only those it holds are left out.
    engine = Holding(first.diff_ids[:2])
    fewer = _known(engine, cache, built(OWN, tmp_path))
    assert [sent.index for sent in fewer.sent] == [2, 3]
    assert engine.asked == [first.diff_ids]  # asked on the parent's layer and the rewrites remembered
    # Nothing remembered under another source date: every layer sent.
    other = built(OWN, tmp_path)
    other.epoch = EPOCH - 1
    assert _known(Holding(first.diff_ids), cache, other) is other
    # Remembered, but the engine holds other layers below (the parent's rewritten otherwise): all sent.
    assert _known(Holding(["sha256:" + "0" * 64, *first.diff_ids[1:]]), cache, built(OWN, tmp_path)).sent


def test_a_load_refused_without_the_layers_held_is_sent_whole(tmp_path: Path) -> None:
    """A layer held when asked can go before the load (another image removed meanwhile): the engine
    refuses the image, and it is loaded again with every layer."""
    cache = Cache(tmp_path / "cache")
    first = built(OWN, tmp_path)
    sent_layers(first)
    _remember(cache, first)
    engine = Holding(first.diff_ids, refuse_first_load=True)
    lines: list[str] = []
    normal, how = _sent_from_data_root(
        engine, cache, built(OWN, tmp_path), "sha256:built", False, StageLog("s", tmp_path / "log", lines.append)
    )
    assert normal is not None and len(normal.sent) == 3 and how == "from the data root"
    assert any("every layer sent" in line for line in lines)
    assert normal.image_id == first.image_id
    # Without the refusal the same image goes with no layer sent.
    kept, how = _sent_from_data_root(
        Holding(first.diff_ids),
        cache,
        built(OWN, tmp_path),
        "sha256:built",
        False,
        StageLog("s", tmp_path / "log", print),
    )
    assert kept is not None and kept.sent == [] and "3 of 3 own layer(s) held" in how
    assert kept.image_id == first.image_id


class Listing(FakeEngine):
    def run(self, image: str, command: list[str], **_: object) -> RunResult:
        self.runs.append((image, command, NO_DEVICES))
        return RunResult(0, f"{'a' * 64}  /opt/{image[-1]}/file\n")

    def image_id(self, ref: str) -> str | None:
        return f"sha256:id-of-{ref}"


def test_install_listings_are_remembered_by_image_id(tmp_path: Path) -> None:
    cache, engine = Cache(tmp_path / "cache"), Listing()
    assert _listed(engine, cache, "image-1", ["/opt"]) == {"/opt/1/file": "a" * 64}
    assert _listed(engine, cache, "image-1", ["/opt"]) == {"/opt/1/file": "a" * 64}
    assert [image for image, _, _ in engine.runs] == ["sha256:id-of-image-1"]  # listed by the id it is kept by
    _listed(engine, cache, "image-2", ["/opt"])  # another image is listed
    _listed(engine, cache, "image-1", ["/opt", "/usr"])  # so is another set of paths
    assert len(engine.runs) == 3


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


def test_the_data_roots_chains_tell_how_many_layers_it_holds(tmp_path: Path) -> None:
    first, second = layer([("a", b"a", LATER)]), layer([("b", b"b", LATER)])
    root, _, config = data_root(tmp_path, [first, second])
    diff_ids = config["rootfs"]["diff_ids"]  # type: ignore[index]
    assert held_layers(root, diff_ids) == 2
    assert held_layers(root, [diff_ids[0], "sha256:" + "1" * 64]) == 1
    assert held_layers(root, [diff_ids[1], diff_ids[0]]) == 0  # the same layers in another order: other chains
    assert chain_ids(diff_ids)[0] == diff_ids[0]


def test_components_and_final_images_fold_and_the_stages_others_are_built_from_do_not() -> None:
    golden = golden_plan()
    assert {name for name, stage in golden.stages.items() if folds(stage)} == {
        name for name, stage in golden.stages.items() if stage.kind not in ("base", "toolkit")
    }
    assert folds(golden.stages["devel-image"]) and not folds(golden.stages["toolkit"])
    for stage in golden.order():  # nothing is built FROM a stage that folds
        assert all(child.copies_only(stage.name) for child in golden.children(stage.name)) or not folds(stage)
