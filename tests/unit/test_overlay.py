"""A layer read from an overlay2 diff directory: Docker's archiver's entries (whiteouts, opaque
directories, hard links, file capabilities, sockets left out), found through the layer store's chain
ids. That these normalise to the same bytes as `docker save` gives is proven on a real engine
(tests/docker/test_overlay.py)."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import tarfile
from pathlib import Path

import pytest

from builder.engine.overlay import image_layer_dirs, layer_entries

# cap_net_raw+ep as the kernel stores it (vfs_cap_data revision 2)
CAPABILITY = bytes.fromhex("0100000200200000000000000000000000000000")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="whiteouts (mknod) and trusted.* xattrs need root")


def entries(diff: Path) -> dict[str, tarfile.TarInfo]:
    return {info.name: info for info, _ in layer_entries(diff)}


def test_files_directories_links_and_modes_come_as_the_archiver_writes_them(tmp_path: Path) -> None:
    diff = tmp_path / "diff"
    (diff / "opt" / "t").mkdir(parents=True)
    (diff / "opt" / "t" / "a").write_bytes(b"data")
    os.link(diff / "opt" / "t" / "a", diff / "opt" / "t" / "b")
    os.symlink("a", diff / "opt" / "t" / "sym")
    os.mkfifo(diff / "opt" / "t" / "fifo")
    (diff / "opt" / "t" / "suid").write_bytes(b"")
    os.chmod(diff / "opt" / "t" / "suid", 0o4755)
    os.utime(diff / "opt" / "t" / "suid", (1, 1.9))
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(diff / "opt" / "t" / "sock"))
    found = entries(diff)
    assert sorted(found) == ["opt", "opt/t", "opt/t/a", "opt/t/b", "opt/t/fifo", "opt/t/suid", "opt/t/sym"]
    assert (found["opt/t/a"].type, found["opt/t/a"].size) == (tarfile.REGTYPE, 4)
    assert (found["opt/t/b"].type, found["opt/t/b"].linkname, found["opt/t/b"].size) == (tarfile.LNKTYPE, "opt/t/a", 0)
    assert (found["opt/t/sym"].type, found["opt/t/sym"].linkname) == (tarfile.SYMTYPE, "a")
    assert found["opt/t/fifo"].type == tarfile.FIFOTYPE and found["opt/t"].isdir()
    assert (found["opt/t/suid"].mode, found["opt/t/suid"].mtime) == (0o4755, 1)
    data = {info.name: path for info, path in layer_entries(diff)}
    assert data["opt/t/a"] == diff / "opt" / "t" / "a" and data["opt/t/b"] is None and data["opt/t"] is None


@needs_root
def test_whiteouts_opaque_directories_and_capabilities_become_the_archivers_entries(tmp_path: Path) -> None:
    diff = tmp_path / "diff"
    (diff / "etc" / "emptied").mkdir(parents=True)
    os.mknod(diff / "etc" / "removed", stat.S_IFCHR | 0o600, os.makedev(0, 0))  # overlayfs's whiteout
    os.mknod(diff / "etc" / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a real device stays one
    try:
        os.setxattr(diff / "etc" / "emptied", "trusted.overlay.opaque", b"y")
        (diff / "etc" / "ping").write_bytes(b"elf")
        os.setxattr(diff / "etc" / "ping", "security.capability", CAPABILITY)
    except OSError as err:
        pytest.skip(f"this filesystem keeps no trusted.* or security.* attributes: {err}")
    found = entries(diff)
    marker = "etc/emptied/.wh..wh..opq"
    assert sorted(found) == ["etc", "etc/.wh.removed", "etc/emptied", marker, "etc/null", "etc/ping"]
    assert found["etc/.wh.removed"].isreg() and found[marker].isreg()
    assert (found["etc/null"].type, found["etc/null"].devmajor, found["etc/null"].devminor) == (tarfile.CHRTYPE, 1, 3)
    capability = found["etc/ping"].pax_headers["SCHILY.xattr.security.capability"]
    assert capability.encode("utf-8", "surrogateescape") == CAPABILITY


def data_root(tmp_path: Path, diff_ids: list[str]) -> tuple[Path, str]:
    """An overlay2 data root holding one image of these layers, each a diff directory; its id."""
    root = tmp_path / "docker"
    config = json.dumps({"rootfs": {"type": "layers", "diff_ids": diff_ids}}).encode()
    image_id = hashlib.sha256(config).hexdigest()
    (root / "image/overlay2/imagedb/content/sha256").mkdir(parents=True)
    (root / "image/overlay2/imagedb/content/sha256" / image_id).write_bytes(config)
    chain = ""
    for index, diff_id in enumerate(diff_ids):
        chain = diff_id if not chain else "sha256:" + hashlib.sha256(f"{chain} {diff_id}".encode()).hexdigest()
        layer = root / "image/overlay2/layerdb/sha256" / chain.removeprefix("sha256:")
        layer.mkdir(parents=True)
        (layer / "diff").write_text(diff_id)
        (layer / "cache-id").write_text(f"cache{index}")
        (root / "overlay2" / f"cache{index}" / "diff").mkdir(parents=True)
    return root, f"sha256:{image_id}"


def test_an_images_layer_directories_are_found_by_chain_id(tmp_path: Path) -> None:
    root, image_id = data_root(tmp_path, ["sha256:" + "1" * 64, "sha256:" + "2" * 64, "sha256:" + "3" * 64])
    found = image_layer_dirs(root, image_id)
    assert found is not None
    assert found.dirs == [root / "overlay2" / f"cache{i}" / "diff" for i in range(3)]
    assert hashlib.sha256(found.config).hexdigest() == image_id.removeprefix("sha256:")


def test_an_image_not_in_the_data_root_or_not_matching_it_is_none(tmp_path: Path) -> None:
    root, image_id = data_root(tmp_path, ["sha256:" + "1" * 64, "sha256:" + "2" * 64])
    assert image_layer_dirs(root, "sha256:" + "f" * 64) is None  # another machine's image
    (root / "image/overlay2/layerdb/sha256" / ("1" * 64) / "diff").write_text("sha256:" + "9" * 64)
    assert image_layer_dirs(root, image_id) is None  # the store disagrees with the config
