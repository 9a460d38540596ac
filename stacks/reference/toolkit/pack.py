#!/usr/bin/env python3
"""Pack the CPU-simulated toolkit into a self-extracting ``.run`` installer.

The real CANN ``.run`` files are makeself archives: a shell header followed by a
compressed tarball. This one has the same shape. Packing is deterministic (sorted
entries, fixed mtime/owner/mode, gzip without a timestamp) so the sha256 of the
installer depends only on the sources and the options, and a committed lock stays valid.
The payload holds sources, not binaries: ``libascendcl.so`` and the Ascend C devkit's
``libascendc.so`` (``payload/asc-devkit/``, inside the toolkit as CANN ships asc-devkit) are
compiled at install time with the system C compiler, which keeps the package
architecture-neutral in content while its name and install check stay per-architecture like CANN's.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import random
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAYLOAD = HERE / "payload"
OPS = HERE / "ops"  # the operator package's files, installed into the toolkit's tree by the same install.sh
DEFAULT_VERSION = "8.3.RC1"
DEFAULT_PACKAGE = {"toolkit": "cpusim-cann-toolkit", "ops": "cpusim-cann-910b-ops"}
ARCHES = ("x86_64", "aarch64")
PAYLOAD_MARKER = "__PAYLOAD_BELOW__"
# When this simulation's packages were "built": the `timestamp=` CANN's packaging appends to each
# package's version.info (hicann/runtime v8.5.0 scripts/update_version_info/update_version_info.sh
# l.28-44, format YYYYMMDD_HHMMSSmmm). Fixed, so packing stays deterministic.
BUILD_TIMESTAMP = "20250101_000000000"
# The AICPU kernel package the runtime's tsd client loads at device setup (hicann/runtime v9.0.0
# src/tsd/tsdclient/src/client_manager.cpp l.331-374: exactly one
# ${ASCEND_AICPU_PATH}/opp/<title>/aicpu/Ascend*-aicpu_syskernels.tar.gz, title `Ascend` for 910B).
AICPU_PACKAGE = "opp/Ascend/aicpu/Ascend-aicpu_syskernels.tar.gz"


def package_file_name(package: str, version: str, arch: str) -> str:
    return f"{package}_{version}_linux-{arch}.run"


def _package_info(kind: str, package: str, version: str, arch: str, timestamp: str) -> bytes:
    fields = (
        f"KIND={kind}\nPACKAGE_NAME={package}\nVERSION={version}\nINNER_VERSION={version}.cpusim\nARCH={arch}\n"
        f"TIMESTAMP={timestamp}\n"
    )
    return fields.encode()


def _aicpu_package(arch: str) -> bytes:
    """A gzip'd tar standing in for the AICPU system kernels (the CPU simulation runs none of them)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        note = f"AICPU system kernels for {arch}: a stand-in of the CPU simulation, not Huawei's.\n"
        _add(tar, "aicpu_kernels_device/README", note.encode(), 0o644)
    compressed = io.BytesIO()
    with gzip.GzipFile(fileobj=compressed, mode="wb", mtime=0, filename="") as gz:
        gz.write(raw.getvalue())
    return compressed.getvalue()


def _files(kind: str) -> list[tuple[str, Path]]:
    """(name in the package, source) of a kind's payload: the toolkit's tree, or the ops package's
    files beside the one install.sh both use."""
    tree = PAYLOAD if kind == "toolkit" else OPS
    found = [(p.relative_to(tree).as_posix(), p) for p in sorted(tree.rglob("*")) if p.is_file()]
    found = [(name, p) for name, p in found if "__pycache__" not in p.parts]
    return found if kind == "toolkit" else [("install.sh", PAYLOAD / "install.sh"), *found]


def _add(tar: tarfile.TarFile, name: str, data: bytes, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    tar.addfile(info, io.BytesIO(data))


def padding(megabytes: int) -> bytes:
    """Incompressible, deterministic bytes standing in for a real toolkit's size (several GB)."""
    block = random.Random(0).randbytes(1 << 20)  # deflate's 32 KiB window cannot see the repeats
    return block * megabytes


def build_payload(
    kind: str, package: str, version: str, arch: str, pad_mb: int = 0, timestamp: str = BUILD_TIMESTAMP
) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for rel, path in _files(kind):
            executable = rel == "install.sh" or "/bin/" in f"/{rel}"
            _add(tar, rel, path.read_bytes(), 0o755 if executable else 0o644)
        _add(tar, "package.info", _package_info(kind, package, version, arch, timestamp), 0o644)
        if kind == "toolkit":
            _add(tar, AICPU_PACKAGE, _aicpu_package(arch), 0o644)
        if pad_mb:
            _add(tar, "include/stackbuild-padding.bin", padding(pad_mb), 0o644)
    compressed = io.BytesIO()
    with gzip.GzipFile(fileobj=compressed, mode="wb", mtime=0, filename="", compresslevel=1 if pad_mb else 9) as gz:
        gz.write(raw.getvalue())
    return compressed.getvalue()


def build_installer(
    kind: str, package: str, version: str, arch: str, pad_mb: int = 0, timestamp: str = BUILD_TIMESTAMP
) -> bytes:
    payload = build_payload(kind, package, version, arch, pad_mb, timestamp)
    header = (HERE / "header.sh").read_text()
    header = header.replace("@PACKAGE@", package).replace("@VERSION@", version)
    header = header.replace("@ARCH@", arch).replace("@PAYLOAD_SHA256@", hashlib.sha256(payload).hexdigest())
    # The header finds the payload by line number, so count lines after substitution.
    payload_line = header.count("\n") + 2
    header = header.replace("@PAYLOAD_LINE@", str(payload_line))
    assert header.count("\n") + 2 == payload_line
    return header.encode() + PAYLOAD_MARKER.encode() + b"\n" + payload


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Pack the CPU-simulated CANN toolkit (not Huawei CANN) into a .run installer."
    )
    parser.add_argument("--version", default=DEFAULT_VERSION, help="toolkit version (default %(default)s)")
    parser.add_argument("--arch", choices=ARCHES, required=True)
    parser.add_argument(
        "--kind", choices=sorted(DEFAULT_PACKAGE), default="toolkit", help="which package (default %(default)s)"
    )
    parser.add_argument(
        "--package-name", help="package name used in the file name and install.info (default cpusim-cann-<kind>)"
    )
    parser.add_argument("--output-dir", type=Path, default=Path("."))
    parser.add_argument("--output-name", help="file name to write (default <package>_<version>_linux-<arch>.run)")
    parser.add_argument(
        "--pad-mb", type=int, default=0, help="add this many MiB of incompressible data (benchmarks at real size)"
    )
    parser.add_argument(
        "--timestamp",
        default=BUILD_TIMESTAMP,
        help="build time recorded in version.info, YYYYMMDD_HHMMSSmmm as CANN's packaging writes it "
        "(default %(default)s, fixed so packing is deterministic; another one gives other bytes)",
    )
    args = parser.parse_args(argv)
    package = args.package_name or DEFAULT_PACKAGE[args.kind]
    data = build_installer(args.kind, package, args.version, args.arch, args.pad_mb, args.timestamp)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    name = args.output_name or package_file_name(package, args.version, args.arch)
    out = args.output_dir / name
    tmp = out.with_name(out.name + ".part")
    tmp.write_bytes(data)
    tmp.chmod(0o755)
    tmp.replace(out)
    print(f"{out} sha256={hashlib.sha256(data).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
