"""A stage image's layers read from the engine's data root normalise to the same bytes as the ones
`docker save` gives: whiteouts (shared inodes on kernels >= 5.8), an opaque directory, hard links,
file capabilities (v2, and v3, which Docker's archiver writes as v2), a set-uid file, a file from
before 1970, a device, a fifo and a socket, over two layers of their own, built by BuildKit and by
the classic builder (each commits layers its own way); and an imported layer as a user's tar has it
("./", directories left implicit, other extended attributes)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import subprocess
import tarfile
import tempfile
import uuid
from pathlib import Path

import pytest

from builder.engine import BuildSpec, EngineError, connect
from builder.engine.docker_engine import DockerEngine
from builder.execute.normalise import normalise, normalise_dirs
from builder.execute.stage_log import StageLog
from builder.execute.stage_normalise import Parent, normalised
from builder.model.arch import Arch
from builder.store.cache import Cache
from tests.docker.conftest import plan_of, stackbuild

EPOCH = 1_704_067_200
# cap_net_raw+ep as the kernel stores it: vfs_cap_data revision 2, and revision 3 with a root uid of 1000
V2_CAPABILITY = "0100000200200000" + "0" * 24
V3_CAPABILITY = "0100000300200000" + "0" * 24 + "e8030000"
DOCKERFILE = """\
FROM {base}
RUN set -e; rm /etc/issue; rm -rf /usr/share/doc && mkdir -p /usr/share/doc/kept && echo k > /usr/share/doc/kept/f; \
    mkdir -p /opt/t && cd /opt/t && echo data > a && ln a z && ln a m && ln -s a sym && mkfifo fifo; \
    mknod null c 1 3; echo s > suid && chmod 4755 suid && touch -d @1 old && chown 1000:1000 m; \
    python3 -c "import os; os.setxattr('a', 'security.capability', bytes.fromhex('{v2}'))"; \
    echo v3 > v3 && python3 -c "import os; os.setxattr('v3', 'security.capability', bytes.fromhex('{v3}'))"; \
    touch -d @-86400 before-1970; \
    python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('/opt/t/sock')"
RUN rm /opt/t/z /etc/debian_version && echo more > /opt/t/b
"""


def built(builder: str, base: str) -> str:
    with tempfile.TemporaryDirectory() as context:
        (Path(context) / "Dockerfile").write_text(DOCKERFILE.format(base=base, v2=V2_CAPABILITY, v3=V3_CAPABILITY))
        return connect(builder=builder).build(Path(context), lambda line: None, BuildSpec({}, Arch.host()))


@pytest.mark.parametrize(("builder", "fold"), [("buildkit", False), ("classic", False), ("buildkit", True)])
def test_layers_read_from_the_data_root_normalise_as_docker_save_gives_them(
    builder: str, fold: bool, workspace: Path, engine: DockerEngine, tmp_path: Path
) -> None:
    stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)  # the base: cached after the first test
    base = plan_of(workspace, "reftest").stages["base-devel"].tag()
    image = built(builder, base)
    try:
        on_disk = engine.layer_dirs(image)
        assert on_disk is not None, "a local overlay2 engine's layers are readable from its data root"
        parents = frozenset(engine.inspect(base).layers)
        (tmp_path / "save").mkdir()
        (tmp_path / "dirs").mkdir()
        with engine.save(image) as saved:
            through_save = normalise(saved, parents, EPOCH, tmp_path / "save", fold=fold)
        from_dirs = normalise_dirs(on_disk, parents, EPOCH, fold=fold)
        assert from_dirs is not None
        sent = b"".join(from_dirs.archive())  # read from the image's layers as it is sent: before it goes
    finally:
        engine.remove(image)
    assert from_dirs.config == through_save.config
    with tarfile.open(fileobj=io.BytesIO(sent)) as archive:
        layers = [m for m in archive.getmembers() if m.name.endswith("layer.tar")]
        assert len(layers) == (1 if fold else 2)  # the image's own layers, rewritten (folded into one)
        names: set[str] = set()
        for layer in layers:
            handle = archive.extractfile(layer)
            assert handle is not None
            with tarfile.open(fileobj=handle) as tar:
                names |= set(tar.getnames())
                if "opt/t/a" in tar.getnames():
                    assert "SCHILY.xattr.security.capability" in tar.getmember("opt/t/a").pax_headers
    expected = {"etc/.wh.issue", "usr/share/doc/.wh..wh..opq", "opt/t/.wh.z", "etc/.wh.debian_version", "opt/t/null"}
    assert expected <= names and "opt/t/sock" not in names


def test_an_imported_layer_read_from_the_data_root_normalises_as_docker_save_gives_it(
    engine: DockerEngine, tmp_path: Path
) -> None:
    tarball = tmp_path / "rootfs.tar"
    with tarfile.open(tarball, "w", format=tarfile.PAX_FORMAT) as tar:
        root = tarfile.TarInfo("./")
        root.type, root.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(root)
        for name, data in (("./deep/er/file", b"implicit parents"), ("./noted", b"x")):
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 1_800_000_000
            if name == "./noted":
                info.pax_headers = {"SCHILY.xattr.user.note": "kept by the tar, not by the archiver"}
            tar.addfile(info, io.BytesIO(data))
    imported = subprocess.run(["docker", "import", str(tarball)], capture_output=True, text=True, check=True)
    image = imported.stdout.strip()
    try:
        on_disk = engine.layer_dirs(image)
        assert on_disk is not None
        (tmp_path / "save").mkdir()
        (tmp_path / "dirs").mkdir()
        with engine.save(image) as saved:
            through_save = normalise(saved, frozenset(), EPOCH, tmp_path / "save")
        from_dirs = normalise_dirs(on_disk, frozenset(), EPOCH)
        assert from_dirs is not None and b"".join(from_dirs.archive())
    finally:
        engine.remove(image)
    assert from_dirs.config == through_save.config


def test_a_rebuild_sends_only_the_layers_above_the_steps_its_builder_reused(
    workspace: Path, engine: DockerEngine, tmp_path: Path
) -> None:
    """The second build reuses the first's two bottom steps (the same built layers): normalising it
    sends only the layer of its new step, and gives the image normalising it with nothing remembered does.
    (A stage others are built FROM keeps its layers: the toolkit's.)"""
    stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)
    plan = plan_of(workspace, "reftest")
    base, stage = plan.stages["base-devel"].tag(), plan.stages["toolkit"]
    steps = f"FROM {base}\nRUN echo a > /opt/a\nRUN echo b > /opt/b\n"
    builder = connect(builder="buildkit")
    lines: list[str] = []
    log = StageLog(stage.name, tmp_path / "log", lines.append)

    made: list[str] = []

    def normalised_build(dockerfile: str, cache: Cache) -> str:
        with tempfile.TemporaryDirectory() as context:
            (Path(context) / "Dockerfile").write_text(dockerfile)
            image = builder.build(Path(context), lambda line: None, BuildSpec({}, Arch.host()))
        made.append(image)  # kept (as children built on it would be): removed at the end
        return normalised(engine, cache, plan, stage, image, [Parent(base, base)], log, keep_built=True)

    remembered = Cache(tmp_path / "remembered")
    try:
        made.append(normalised_build(steps, remembered))
        assert "held as rewritten before" not in lines[-1]
        changed = steps + f"RUN echo {uuid.uuid4().hex} > /opt/c\n"
        rebuilt = normalised_build(changed, remembered)
        made.append(rebuilt)
        assert "2 of 3 own layer(s) held as rewritten before" in lines[-1]
        engine.remove(rebuilt)
        assert normalised_build(changed, Cache(tmp_path / "nothing")) == rebuilt
        assert "held as rewritten before" not in lines[-1]
    finally:
        for image in made:
            with contextlib.suppress(EngineError):
                engine.remove(image)


FOLDED_STEPS = """\
FROM {base}
RUN mkdir -p /opt/f/d/sub && echo a > /opt/f/d/sub/a && echo x > /opt/f/a && ln /opt/f/a /opt/f/z \
 && echo keep > /opt/f/keep && rm -rf /usr/share/doc && echo file > /usr/share/doc && rm -rf /etc/apt \
 && rm /etc/debian_version
RUN rm -rf /opt/f/d && mkdir -p /opt/f/d && echo b > /opt/f/d/b && rm /opt/f/a && echo new > /opt/f/a
RUN mkdir /etc/apt && echo n > /etc/apt/new && rm /opt/f/keep && mkdir /opt/f/keep && echo k > /opt/f/keep/k \
 && echo again > /etc/debian_version && rm /usr/share/doc && mkdir /usr/share/doc && echo d > /usr/share/doc/d
RUN rm -rf /opt/f/keep && echo file > /opt/f/keep
"""
# Each path's type, mode, owner and content (or link target): what a child copying from the image reads.
# (Not the files Docker mounts over each container's: its hostname, hosts and resolv.conf.)
MOUNTED = "! -path /etc/hostname ! -path /etc/hosts ! -path /etc/resolv.conf"
TREE = (
    f"find /opt/f /etc /usr/share -xdev {MOUNTED} -printf '%p %y %m %U:%G %l\\n' | sort; "
    f"find /opt/f /etc /usr/share -xdev -type f {MOUNTED} -print0 | sort -z | xargs -0 sha256sum"
)


def test_a_stages_own_layers_folded_into_one_give_the_files_its_layers_give(
    workspace: Path, engine: DockerEngine, tmp_path: Path
) -> None:
    """Whiteouts of the parent's files and of the stage's own, a directory removed and made again in a
    later layer (its parent's and its own), a parent's directory made a file and a directory again, a
    file made a directory and back, a hard link whose file was replaced: the image normalised with its
    layers folded into one holds the files the image as built holds."""
    stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)
    plan = plan_of(workspace, "reftest")
    base = plan.stages["base-devel"].tag()
    with tempfile.TemporaryDirectory() as context:
        (Path(context) / "Dockerfile").write_text(FOLDED_STEPS.format(base=base))
        image = connect(builder="buildkit").build(Path(context), lambda line: None, BuildSpec({}, Arch.host()))
    loaded = []
    try:
        on_disk = engine.layer_dirs(image)
        assert on_disk is not None
        parents = frozenset(engine.inspect(base).layers)
        normal = normalise_dirs(on_disk, parents, EPOCH, fold=True)
        assert normal is not None and len(normal.sent) == 1
        engine.load(normal.archive())
        loaded.append(normal.image_id)
        with engine.save(image) as saved_image:  # docker save's way folds it the same
            assert normalise(saved_image, parents, EPOCH, tmp_path, fold=True).config == normal.config
        assert len(engine.inspect(normal.image_id).layers) == len(engine.inspect(base).layers) + 1
        as_built = engine.run(image, ["sh", "-c", TREE]).output
        assert "/opt/f/z f" in as_built and "/etc/apt/new f" in as_built and "/usr/share/doc/d f" in as_built
        assert engine.run(normal.image_id, ["sh", "-c", TREE]).output == as_built
        # Its history names as many layers as it has (docker history refuses one that names more).
        subprocess.run(["docker", "history", "-q", normal.image_id], check=True, capture_output=True)
    finally:
        for made in [*loaded, image]:
            with contextlib.suppress(EngineError):
                engine.remove(made)


CANONICAL_STEP = """\
FROM {base}
RUN mkdir -p /opt/k/a/b /opt/k/a-c && echo data > /opt/k/a/f && ln /opt/k/a/f /opt/k/a-c/g \
 && ln -s ../a/f /opt/k/a-c/s && echo x > /opt/k/$(printf 'n%.0s' $(seq 1 120)) && mkfifo /opt/k/fifo \
 && mkdir -p /opt/k/$(printf 'd%.0s' $(seq 1 99))/e && echo s > /opt/k/suid && chmod 4755 /opt/k/suid \
 && echo e > /opt/k/$(printf 'caf\\303\\251') && touch -d @1 /opt/k/old \
 && python3 -c "import os; os.setxattr('/opt/k/a/f', 'security.capability', bytes.fromhex('{v2}'))" {dating}
"""
DATING = (
    "&& find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path /etc/hosts -o -path /etc/hostname"
    " -o -path /etc/resolv.conf \\) -prune -o -newermt @{epoch} -print0 | xargs -0r touch -h -d @{epoch}"
)


@pytest.mark.parametrize("builder", ["buildkit", "classic"])
def test_a_layer_whose_files_are_canonical_as_built_is_the_layer_normalising_writes(
    builder: str, workspace: Path, engine: DockerEngine, tmp_path: Path
) -> None:
    """A step that dates what it wrote no later than the source date (as the toolkit's install steps
    do) makes a layer normalising would write byte for byte: its rewrite has the built layer's diff
    id, and normalising keeps it as the engine holds it (not sent), giving the image that sending
    every layer rewritten gives. Without the dating it is rewritten and sent."""
    stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)
    plan = plan_of(workspace, "reftest")
    base, epoch, stage = plan.stages["base-devel"].tag(), plan.source_date_epoch, plan.stages["toolkit"]
    parents = frozenset(engine.inspect(base).layers)
    lines: list[str] = []
    log = StageLog(stage.name, tmp_path / "log", lines.append)
    for dating, canonical in ((DATING.format(epoch=epoch), True), ("", False)):
        with tempfile.TemporaryDirectory() as context:
            step = CANONICAL_STEP.format(base=base, v2=V2_CAPABILITY, dating=dating)
            (Path(context) / "Dockerfile").write_text(step)
            image = connect(builder=builder).build(Path(context), lambda line: None, BuildSpec({}, Arch.host()))
        made = [image]
        try:
            on_disk = engine.layer_dirs(image)
            assert on_disk is not None
            normal = normalise_dirs(on_disk, parents, epoch)
            assert normal is not None
            (layer,) = normal.sent
            assert layer.canonical is canonical
            rewritten = hashlib.sha256(b"".join(layer.chunks())).hexdigest()
            assert (f"sha256:{rewritten}" == layer.built[0]) is canonical
            cache = Cache(tmp_path / f"cache-{canonical}")
            kept = normalised(engine, cache, plan, stage, image, [Parent(base, base)], log, keep_built=True)
            made.append(kept)
            assert ("1 of 1 own layer(s) held (1 canonical as built)" in lines[-1]) is canonical, lines[-1]
            engine.remove(kept)
            every = [Parent(base, base)]
            assert normalised(engine, cache, plan, stage, image, every, log, keep_built=True, remembered=False) == kept
            assert "held" not in lines[-1]
        finally:
            for reference in made:
                with contextlib.suppress(EngineError):
                    engine.remove(reference)
