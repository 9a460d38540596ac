#!/usr/bin/env python3
"""Wheels written with zipfile alone (no build backend), byte-for-byte reproducible.

Run as a script, it (re)writes the reference wheelhouse: simreport-1.0-py3-none-any.whl from
src/simreport, the same bytes every time (tests/reference checks the committed one). The tests
import make_wheel to build their own wheelhouses.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
import sys
import zipfile
from pathlib import Path

GENERATOR = "stackbuild reference wheelhouse (1.0)"
# The earliest time a zip can hold: the same inputs give the same bytes.
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def normalise(name: str) -> str:
    """A project name as wheel file and .dist-info names spell it (runs of ``-_.`` become ``_``)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def make_wheel(
    out_dir: Path,
    name: str,
    version: str,
    tag: str = "py3-none-any",
    modules: dict[str, str] | None = None,
    requires: list[str] | None = None,
) -> Path:
    """Write ``<out_dir>/<name>-<version>-<tag>.whl`` holding ``modules`` (path in wheel -> source).

    ``tag`` is ``python-abi-platform``, e.g. ``py3-none-any`` or ``py3-none-manylinux2014_x86_64``;
    ``requires`` become ``Requires-Dist`` lines (e.g. ``"sbdep>=2.0"``).
    """
    dist = normalise(name)
    safe_version = version.replace("-", "_")
    info = f"{dist}-{safe_version}.dist-info"
    pure = tag.rsplit("-", 1)[-1] == "any"
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    metadata += [f"Requires-Dist: {req}" for req in requires or []]
    wheel = [
        "Wheel-Version: 1.0",
        f"Generator: {GENERATOR}",
        f"Root-Is-Purelib: {'true' if pure else 'false'}",
        f"Tag: {tag}",
    ]
    entries = {path.lstrip("/"): source.encode() for path, source in sorted((modules or {}).items())}
    entries[f"{info}/METADATA"] = ("\n".join(metadata) + "\n").encode()
    entries[f"{info}/WHEEL"] = ("\n".join(wheel) + "\n").encode()
    entries[f"{info}/RECORD"] = _record(entries, f"{info}/RECORD")

    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{dist}-{safe_version}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as whl:
        for member, data in entries.items():
            entry = zipfile.ZipInfo(member, date_time=ZIP_EPOCH)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o100644 << 16  # a regular file, rw-r--r--
            whl.writestr(entry, data)
    return path


def _record(entries: dict[str, bytes], record: str) -> bytes:
    """RECORD: each file's urlsafe-base64 sha256 (no padding) and size; RECORD itself has neither."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for member, data in entries.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        writer.writerow([member, f"sha256={digest}", str(len(data))])
    writer.writerow([record, "", ""])
    return out.getvalue().encode()


HERE = Path(__file__).resolve().parent


def reference_wheels(out_dir: Path = HERE) -> list[Path]:
    sources = HERE / "src" / "simreport"
    modules = {f"simreport/{p.name}": p.read_text() for p in sorted(sources.glob("*.py"))}
    return [make_wheel(out_dir, "simreport", "1.0", modules=modules)]


if __name__ == "__main__":
    for wheel in reference_wheels(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE):
        print(wheel)
