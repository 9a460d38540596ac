"""Layer tars and saved images made in memory, as Docker writes them, for the tests of reading,
normalising and folding layers: PARENT, a parent's layer, and OWN, three layers of a stage's own."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Mapping

from builder.execute.image_load import Normalised

EPOCH = 1_700_000_000
LATER = EPOCH + 86_400 * 30


def layer(
    entries: list[tuple[str, bytes | None, int]], uname: str = "builder", links: Mapping[str, str] | None = None
) -> bytes:
    """A layer tar: (name, data or None for a directory, mtime), in the order given; links: the
    names written as hard links to another."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data, mtime in entries:
            info = tarfile.TarInfo(name)
            info.mtime, info.uname, info.uid = mtime, uname, 1000
            if links and name in links:
                info.type, info.linkname = tarfile.LNKTYPE, links[name]
                tar.addfile(info)
            elif data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def saved(layers: list[bytes], config: Mapping[str, object]) -> io.BytesIO:
    """An archive as `docker save` writes it: layer directories, the config, manifest.json last."""
    out = io.BytesIO()
    paths = [f"{n:064x}/layer.tar" for n in range(len(layers))]
    body = json.dumps(config).encode()
    files = [*zip(paths, layers, strict=True), ("c0ffee.json", body)]
    files.append(
        ("manifest.json", json.dumps([{"Config": "c0ffee.json", "RepoTags": ["x:y"], "Layers": paths}]).encode())
    )
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    out.seek(0)
    return out


PARENT = layer([("base", b"base", EPOCH - 1)])
OWN = [layer([(f"opt/{n}", bytes([n]) * 10, LATER)]) for n in range(3)]


def sent_layers(normal: Normalised) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(b"".join(normal.archive()))) as tar:
        return [name for name in tar.getnames() if name.endswith("layer.tar")]
