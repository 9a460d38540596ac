"""Normalising a built image: the same files give the same layer bytes and the same image id,
whatever the build's clock, entry order or owner names."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import tempfile
from pathlib import Path

import pytest

from builder.execute.image_load import rebased
from builder.execute.layer_read import spooled
from builder.execute.layer_rewrite import canonical_entries, layer_chunks, layer_size, write_layer
from builder.execute.normalise import normalise
from tests.layer_tars import EPOCH, LATER, layer, saved


def normal(data: bytes) -> bytes:
    out = io.BytesIO()
    with tempfile.TemporaryFile() as spool:
        write_layer(spooled(io.BytesIO(data), spool), out, EPOCH)
    return out.getvalue()


def pyc(mtime: int) -> bytes:
    return b"\xa7\r\r\n" + b"\0\0\0\0" + mtime.to_bytes(4, "little") + (10).to_bytes(4, "little") + b"code"


def test_files_that_differ_only_in_mtime_order_and_owner_name_give_the_same_layer() -> None:
    first = layer([("opt/", None, LATER), ("opt/b", b"b", LATER), ("opt/a", b"a", LATER + 5)])
    second = layer([("opt/a", b"a", LATER + 99), ("opt/", None, LATER + 1), ("opt/b", b"b", LATER + 7)], "root")
    assert first != second and normal(first) == normal(second)
    with tarfile.open(fileobj=io.BytesIO(normal(first))) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == ["opt", "opt/a", "opt/b"]
    assert {m.mtime for m in members} == {EPOCH} and {m.uname for m in members} == {""}
    assert {m.uid for m in members} == {1000}  # numeric owners stay (CANN runs as HwHiAiUser)
    older = layer([("opt/a", b"a", EPOCH - 10)])
    with tarfile.open(fileobj=io.BytesIO(normal(older))) as tar:
        assert tar.getmember("opt/a").mtime == EPOCH - 10  # clamped, not set: older files keep their time


def test_build_records_go_and_stamps_inside_files_are_clamped() -> None:
    built = layer(
        [
            ("var/cache/ldconfig/aux-cache", b"random", LATER),
            ("var/log/dpkg.log", b"2026-12-01 install", LATER),
            ("var/lib/apt/lists/deb.debian.org_dists", b"lists", LATER),
            ("opt/m/__pycache__/m.cpython-311.pyc", pyc(LATER), LATER),
            ("etc/shadow", b"root:*:20423:0:99999:7:::\nHwHiAiUser:!:20423::::::\n", LATER),
        ]
    )
    with tarfile.open(fileobj=io.BytesIO(normal(built))) as tar:
        names = tar.getnames()
        compiled = tar.extractfile("opt/m/__pycache__/m.cpython-311.pyc")
        shadow = tar.extractfile("etc/shadow")
        assert compiled is not None and shadow is not None
        assert compiled.read()[8:12] == EPOCH.to_bytes(4, "little")  # as its source's clamped mtime
        days = EPOCH // 86_400
        assert shadow.read().decode() == f"root:*:{days}:0:99999:7:::\nHwHiAiUser:!:{days}::::::\n"
    assert names == ["etc/shadow", "opt/m/__pycache__/m.cpython-311.pyc"]


def hard_linked(first: str, second: str) -> bytes:
    """A layer holding one file under two names, written first under `first` (as an archiver that
    met that name first writes it)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo(first)
        info.size, info.mode = 1, 0o755
        tar.addfile(info, io.BytesIO(b"x"))
        link = tarfile.TarInfo(second)
        link.type, link.linkname, link.mode = tarfile.LNKTYPE, first, 0o755
        tar.addfile(link)
    return out.getvalue()


def test_hard_links_are_written_as_their_first_name_in_path_order_whichever_came_first() -> None:
    written = normal(hard_linked("z/target", "a/link"))
    with tarfile.open(fileobj=io.BytesIO(written)) as tar:
        assert [(m.name, m.type, m.linkname) for m in tar] == [
            ("a/link", tarfile.REGTYPE, ""),
            ("z/target", tarfile.LNKTYPE, "a/link"),
        ]
        data = tar.extractfile("a/link")
        assert data is not None and data.read() == b"x"
    assert normal(hard_linked("a/link", "z/target")) == written


def test_an_image_is_normalised_past_its_parents_layers(tmp_path: Path) -> None:
    parent = layer([("base", b"base", LATER)])
    own = layer([("opt/x", b"x", LATER)])
    digests = [f"sha256:{hashlib.sha256(d).hexdigest()}" for d in (parent, own)]
    config = {
        "architecture": "amd64",
        "created": "2026-12-01T04:00:00.123Z",
        "history": [{"created": "2026-12-01T04:00:00Z", "created_by": "COPY x"}],
        "moby.buildkit.buildinfo.v1": "c291cmNlcw==",
        "rootfs": {"type": "layers", "diff_ids": digests},
    }
    result = normalise(saved([parent, own], config), frozenset(digests[:1]), EPOCH, tmp_path)
    written = json.loads(result.config)
    assert written["created"] == "2023-11-14T22:13:20Z" and written["history"][0]["created"] == written["created"]
    assert "moby.buildkit.buildinfo.v1" not in written
    assert written["rootfs"]["diff_ids"] == [digests[0], f"sha256:{hashlib.sha256(normal(own)).hexdigest()}"]
    assert result.image_id == f"sha256:{hashlib.sha256(result.config).hexdigest()}"
    with tarfile.open(fileobj=io.BytesIO(b"".join(result.archive()))) as tar:
        names = tar.getnames()
        loaded = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
    assert names == [f"{1:064x}/layer.tar", f"{result.image_id[7:]}.json", "manifest.json"]  # no parent layer
    assert loaded[0]["Layers"] == [f"{0:064x}/layer.tar", f"{1:064x}/layer.tar"]
    (tmp_path / "2").mkdir()
    again = normalise(
        saved([parent, layer([("opt/x", b"x", LATER + 60)])], config), frozenset(digests[:1]), EPOCH, tmp_path / "2"
    )
    assert again.image_id == result.image_id


def test_a_layer_with_a_parents_bytes_above_the_parents_own_is_the_stages_and_normalised(tmp_path: Path) -> None:
    """Only the bottom layers are the parent's (the image built FROM it): a later layer with the same
    bytes (an empty one, a step that changed nothing) is the stage's own, normalised as any other."""
    same = layer([("etc/x", b"x", EPOCH - 1)])
    own = layer([("opt/x", b"x", LATER)])
    digests = [f"sha256:{hashlib.sha256(d).hexdigest()}" for d in (same, own, same)]
    config = {"created": "x", "history": [], "rootfs": {"type": "layers", "diff_ids": digests}}
    result = normalise(saved([same, own, same], config), frozenset(digests[:1]), EPOCH, tmp_path)
    with tarfile.open(fileobj=io.BytesIO(b"".join(result.archive()))) as tar:
        assert [n for n in tar.getnames() if n.endswith("layer.tar")] == [f"{1:064x}/layer.tar", f"{2:064x}/layer.tar"]
        copied = tar.extractfile(f"{2:064x}/layer.tar")
        assert copied is not None and copied.read() == normal(same)


def test_a_layer_saved_twice_as_a_link_is_read_through_it(tmp_path: Path) -> None:
    """docker save writes a layer the image holds twice once, and links the second to it."""
    same, own = layer([("etc/x", b"x", EPOCH - 1)]), layer([("opt/x", b"x", LATER)])
    digests = [f"sha256:{hashlib.sha256(d).hexdigest()}" for d in (same, own, same)]
    paths = ["a/layer.tar", "b/layer.tar", "c/layer.tar"]
    config = json.dumps({"created": "x", "history": [], "rootfs": {"type": "layers", "diff_ids": digests}}).encode()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in (("a/layer.tar", same), ("b/layer.tar", own)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("c/layer.tar")
        link.type, link.linkname = tarfile.SYMTYPE, "../a/layer.tar"
        tar.addfile(link)
        manifest = json.dumps([{"Config": "c.json", "RepoTags": None, "Layers": paths}]).encode()
        for name, data in (("c.json", config), ("manifest.json", manifest)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    out.seek(0)
    result = normalise(out, frozenset(digests[:1]), EPOCH, tmp_path)
    with tarfile.open(fileobj=io.BytesIO(b"".join(result.archive()))) as tar:
        sent = tar.extractfile("c/layer.tar")
        assert sent is not None and sent.read() == normal(same)


def test_a_file_left_out_keeps_its_data_under_a_kept_hard_link() -> None:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo("tmp/build/libfoo.so")  # /tmp is left out, but the library links to it
        info.size = 3
        tar.addfile(info, io.BytesIO(b"elf"))
        link = tarfile.TarInfo("usr/lib/libfoo.so")
        link.type, link.linkname = tarfile.LNKTYPE, "tmp/build/libfoo.so"
        tar.addfile(link)
        whiteout = tarfile.TarInfo("tmp/.wh.stale")  # a deletion: kept wherever it is
        whiteout.mode, whiteout.mtime = 0o644, 2_000_000_000
        tar.addfile(whiteout)
    with tarfile.open(fileobj=io.BytesIO(normal(out.getvalue()))) as tar:
        assert tar.getnames() == ["tmp/.wh.stale", "usr/lib/libfoo.so"]
        library, marker = tar.getmember("usr/lib/libfoo.so"), tar.getmember("tmp/.wh.stale")
        assert library.isreg() and (library.size, marker.mode, marker.mtime) == (3, 0o600, EPOCH)


def test_the_classic_builders_parent_image_id_is_not_kept(tmp_path: Path) -> None:
    """The classic builder's config names the previous step's image, whose id holds that step's time."""
    own = layer([("opt/x", b"x", LATER)])
    digest = f"sha256:{hashlib.sha256(own).hexdigest()}"
    config = {
        "config": {"Image": "sha256:" + "9" * 64, "Env": ["A=1"]},
        "rootfs": {"type": "layers", "diff_ids": [digest]},
    }
    written = json.loads(normalise(saved([own], config), frozenset(), EPOCH, tmp_path).config)
    assert written["config"] == {"Image": "", "Env": ["A=1"]}


def test_a_rewritten_layer_reads_back_as_its_entries_and_its_size_is_known_before_it_is_written() -> None:
    """The load's archive names a layer's size before its bytes: layer_size must be what layer_chunks
    gives, and tarfile must read back the same entries (names past 100 characters, a hard link, a
    non-ASCII name, /etc/shadow's clamped days changing its size). That the bytes are Docker's own
    is tests/unit/execute/test_go_tar.py's."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        shadow = b"root:*:99999:0:::::\n"
        for name, body in (("opt/" + "n" * 150, b"x" * 700), ("opt/caf\u00e9", b"c"), ("etc/shadow", shadow)):
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(body), LATER
            tar.addfile(info, io.BytesIO(body))
        link = tarfile.TarInfo("opt/link")
        link.type, link.linkname = tarfile.LNKTYPE, "opt/caf\u00e9"
        tar.addfile(link)
    entries = canonical_entries(spooled(io.BytesIO(out.getvalue()), spool := io.BytesIO()), EPOCH)
    written = b"".join(layer_chunks(entries, EPOCH))
    assert len(written) == layer_size(entries) and spool.tell() > 0
    with tarfile.open(fileobj=io.BytesIO(written)) as tar:
        read = {member.name: (member.type, member.size, member.mtime, member.linkname) for member in tar}
        assert tar.extractfile("etc/shadow").read() == f"root:*:{EPOCH // 86400}:0:::::\n".encode()  # type: ignore[union-attr]
        assert tar.extractfile("opt/" + "n" * 150).read() == b"x" * 700  # type: ignore[union-attr]
    assert read == {
        "etc/shadow": (tarfile.REGTYPE, len(f"root:*:{EPOCH // 86400}:0:::::\n"), EPOCH, ""),
        "opt/caf\u00e9": (tarfile.REGTYPE, 1, EPOCH, ""),
        "opt/link": (tarfile.LNKTYPE, 0, EPOCH, "opt/caf\u00e9"),
        "opt/" + "n" * 150: (tarfile.REGTYPE, 700, EPOCH, ""),
    }


def test_a_layer_with_the_bytes_of_a_layer_it_copied_from_is_its_own_above_the_parent_it_is_from(
    tmp_path: Path,
) -> None:
    """COPY --from a sibling as built can give a layer byte for byte the sibling's: above the FROM
    parent's layers (own_from) it is the stage's own, normalised like the rest."""
    parent = layer([("base", b"base", EPOCH - 1)])
    copied = layer([("opt/s/f", b"f", LATER)])  # the sibling's own layer, copied whole
    digests = [f"sha256:{hashlib.sha256(d).hexdigest()}" for d in (parent, copied)]
    config = {"created": "x", "history": [], "rootfs": {"type": "layers", "diff_ids": digests}}
    parents = frozenset(digests)  # the FROM parent's layer and the sibling's
    assert normalise(saved([parent, copied], config), parents, EPOCH, tmp_path).sent == []
    (tmp_path / "from").mkdir()
    result = normalise(saved([parent, copied], config), parents, EPOCH, tmp_path / "from", own_from=1)
    assert [layer.index for layer in result.sent] == [1]
    assert result.diff_ids[1] == f"sha256:{hashlib.sha256(normal(copied)).hexdigest()}"


def test_an_image_built_on_its_parent_as_built_is_put_over_the_parent_normalised(tmp_path: Path) -> None:
    """A child started before its parent was normalised: its own layers as if built on the normalised
    parent (the config names the parent's normalised layers; only its own are sent)."""
    parent_as_built = layer([("opt/p", b"p", LATER)])
    own = layer([("opt/x", b"x", LATER)])
    digests = [f"sha256:{hashlib.sha256(d).hexdigest()}" for d in (parent_as_built, own)]
    config = {"created": "x", "history": [], "rootfs": {"type": "layers", "diff_ids": digests}}
    on_built = normalise(saved([parent_as_built, own], config), frozenset(digests[:1]), EPOCH, tmp_path)
    parent_settled = f"sha256:{hashlib.sha256(normal(parent_as_built)).hexdigest()}"
    over = rebased(on_built, 1, [parent_settled])
    assert json.loads(over.config)["rootfs"]["diff_ids"] == [parent_settled, on_built.diff_ids[1]]
    with tarfile.open(fileobj=io.BytesIO(b"".join(over.archive()))) as tar:
        loaded = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        assert [n for n in tar.getnames() if n.endswith("layer.tar")] == [f"{1:064x}/layer.tar"]
    assert loaded[0]["Layers"] == [f"{parent_settled[7:]}/layer.tar", f"{1:064x}/layer.tar"]
    # The same child built on the normalised parent gives the same image.
    config_on_settled = {**config, "rootfs": {"type": "layers", "diff_ids": [parent_settled, digests[1]]}}
    (tmp_path / "settled").mkdir()
    on_settled = normalise(
        saved([normal(parent_as_built), own], config_on_settled),
        frozenset([parent_settled]),
        EPOCH,
        tmp_path / "settled",
    )
    assert over.image_id == on_settled.image_id
    with pytest.raises(ValueError, match="has 2 layers where it was built with 1"):
        rebased(on_built, 1, [parent_settled, parent_settled])


def test_what_normalising_leaves_out_or_changes_is_known_before_a_layer_is_sent() -> None:
    """A dropped file, a .pyc whose stamp is clamped and shadow's days are changes a child built on the
    image as built would see; files only dated later are not."""
    shadow = f"root:*:{LATER // 86400}:0:99999:7:::\n".encode()
    changing = layer(
        [("var/log/x.log", b"log", LATER), ("opt/m.pyc", pyc(LATER), LATER), ("etc/shadow", shadow, LATER)]
    )
    changed: list[str] = []
    entries = canonical_entries(spooled(io.BytesIO(changing), io.BytesIO()), EPOCH, changed)
    assert sorted(changed) == ["etc/shadow", "opt/m.pyc", "var/log/x.log"]
    assert b"".join(layer_chunks(entries, EPOCH))  # sending it changes nothing more
    dated: list[str] = []
    canonical_entries(
        spooled(io.BytesIO(layer([("opt/x", b"x", LATER), ("opt/p.pyc", pyc(EPOCH), LATER)])), io.BytesIO()),
        EPOCH,
        dated,
    )
    assert dated == []
