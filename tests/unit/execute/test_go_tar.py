"""The canonical layer tar is byte for byte the tar Docker's archiver writes for the same entries:
tests/golden/docker-layer/layer.tar is a layer Docker 20.10.24 wrote (its step beside it), with
directories, hard links, a name cut into USTAR's prefix, names and a link too long for any header
field, non-ASCII names, setuid/setgid/sticky bits, a FIFO, devices, an empty file and a file
capability. A layer whose files are canonical already is thereby kept as the engine built it."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from builder.execute import go_tar
from builder.execute.layer_read import spooled
from builder.execute.layer_rewrite import canonical_entries, layer_chunks, skeleton, walk_order

DOCKER_LAYER = Path(__file__).parents[2] / "golden" / "docker-layer" / "layer.tar"
LATEST = (1 << 33) - 1  # a source date after every entry's: nothing is dated again


def test_the_canonical_tar_of_a_layer_docker_wrote_is_the_bytes_docker_wrote() -> None:
    docker = DOCKER_LAYER.read_bytes()
    changed: list[str] = []
    entries = canonical_entries(spooled(io.BytesIO(docker), io.BytesIO()), LATEST, changed)
    assert b"".join(layer_chunks(entries, LATEST)) == docker
    assert not changed


def test_the_entries_come_in_docker_s_walk_order_not_path_order() -> None:
    """filepath.Walk: opt/a and all under it before opt/a-c, though "opt/a-c" < "opt/a/b" as strings."""
    with tarfile.open(DOCKER_LAYER) as tar:
        names = [member.name for member in tar]
    assert names == sorted(names, key=walk_order) != sorted(names)
    assert names.index("opt/a/h") < names.index("opt/a-c")


def test_a_layer_dated_after_the_source_date_is_not_the_one_docker_wrote() -> None:
    docker = DOCKER_LAYER.read_bytes()
    entries = canonical_entries(spooled(io.BytesIO(docker), io.BytesIO()), 1_700_000_000)
    assert b"".join(layer_chunks(entries, 1_700_000_000)) != docker  # /etc was dated by the build's clock


def test_the_skeleton_names_the_bytes_between_files_and_each_file_s_size() -> None:
    docker = DOCKER_LAYER.read_bytes()
    entries = canonical_entries(spooled(io.BytesIO(docker), io.BytesIO()), LATEST)
    pieces = skeleton(entries)
    sizes = [piece for piece in pieces if isinstance(piece, int)]
    with tarfile.open(DOCKER_LAYER) as tar:
        assert sizes == [member.size for member in tar if member.isreg() and member.size]
    rebuilt = b"".join(bytes(piece) if isinstance(piece, int) else piece for piece in pieces)
    assert len(rebuilt) == len(docker)


def test_owner_names_do_not_depend_on_the_host() -> None:
    """Docker 20.10 writes the names its host gives an id; the canonical tar names root alone."""
    header = go_tar.header("opt/f", tarfile.REGTYPE, 0o100644, 1000, 0, 0, 0)
    assert header[265:297].rstrip(b"\0") == b"" and header[297:329].rstrip(b"\0") == b"root"


def test_a_field_too_large_for_its_header_goes_in_an_extended_header() -> None:
    big = go_tar.header("opt/f", tarfile.REGTYPE, 0o100644, 1 << 22, 0, 9 << 30, -5)
    with tarfile.open(fileobj=io.BytesIO(big), mode="r|") as tar:
        member = tar.next()  # its data is not there: only its header is read
    assert member is not None and (member.uid, member.size, member.mtime) == (1 << 22, 9 << 30, -5)
