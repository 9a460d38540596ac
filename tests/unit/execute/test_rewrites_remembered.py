"""What a built layer was rewritten to is remembered: a rebuild whose builder reused its bottom steps
sends only the layers from the first changed step up, and gives the image sending them all gives.
The components' install listings are remembered by image id the same way."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path

from builder.engine import NO_DEVICES, EngineError, RunResult
from builder.engine.overlay import chain_ids, held_layers
from builder.execute.image_load import Normalised
from builder.execute.normalise import normalise
from builder.execute.stage_checks import _listed
from builder.execute.stage_log import StageLog
from builder.execute.stage_normalise import _known, _remember, _sent_from_data_root
from builder.store.cache import Cache
from tests.fake_engine import FakeEngine
from tests.layer_tars import EPOCH, LATER, OWN, PARENT, layer, saved, sent_layers
from tests.unit.engine.test_overlay import data_root


def built(own: Sequence[bytes], tmp_path: Path) -> Normalised:
    """An image of PARENT and own layers, normalised through docker save's path (every own layer sent)."""
    layers = [PARENT, *own]
    digests = [f"sha256:{hashlib.sha256(data).hexdigest()}" for data in layers]
    config = {"created": "x", "history": [], "rootfs": {"type": "layers", "diff_ids": digests}}
    scratch = tmp_path / f"scratch-{len(list(tmp_path.iterdir()))}"
    scratch.mkdir()
    return normalise(saved(layers, config), frozenset(digests[:1]), EPOCH, scratch)


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


def test_the_data_roots_chains_tell_how_many_layers_it_holds(tmp_path: Path) -> None:
    first, second = layer([("a", b"a", LATER)]), layer([("b", b"b", LATER)])
    root, _, config = data_root(tmp_path, [first, second])
    diff_ids = config["rootfs"]["diff_ids"]  # type: ignore[index]
    assert held_layers(root, diff_ids) == 2
    assert held_layers(root, [diff_ids[0], "sha256:" + "1" * 64]) == 1
    assert held_layers(root, [diff_ids[1], diff_ids[0]]) == 0  # the same layers in another order: other chains
    assert chain_ids(diff_ids)[0] == diff_ids[0]
