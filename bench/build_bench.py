#!/usr/bin/env python3
"""Benchmark: stackbuild vs a plain multi-stage `docker build` of the same reference stack.

Not a test. Measures, in one run and for both: a cold build (only the base image present),
a no-op rebuild, a rebuild after touching a harness source, and one after touching ascend-c.
Prints a table (wall-clock seconds; for stackbuild also its own "builder time" without
Python start-up). Works in a scratch copy of the reference stack; it removes stackbuild's
stage images (but the bases) to make the cold build cold.

    python bench/build_bench.py [--markdown]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from builder.engine.docker_engine import DockerEngine  # noqa: E402

STACK = "benchref"
BASELINE_TAG = "stackbuild-bench/baseline:latest"


def sh(*cmd: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    run = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if run.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd[:4])}... failed:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
    return run


def stackbuild(root: Path, *args: str) -> tuple[float, float]:
    """(wall seconds, builder seconds) of a stackbuild command."""
    start = time.monotonic()
    run = sh(sys.executable, "-m", "builder", "--root", str(root), *args, env={"PYTHONPATH": str(ROOT)})
    wall = time.monotonic() - start
    match = re.search(r"built, \d+ cached in ([\d.]+)s", run.stderr)
    return wall, float(match.group(1)) if match else wall


def baseline(context: Path, base_image: str) -> float:
    start = time.monotonic()
    sh(
        "docker",
        "build",
        "-q",
        "-f",
        str(context / "baseline.Dockerfile"),
        "--build-arg",
        f"BASE={base_image}",
        "-t",
        BASELINE_TAG,
        str(context),
        env={"DOCKER_BUILDKIT": "0"},
    )
    return time.monotonic() - start


def touch(path: Path) -> None:
    marker = "//" if path.suffix == ".c" else "#"
    path.write_text(path.read_text() + f"\n{marker} bench {uuid.uuid4().hex}\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args()
    engine = DockerEngine()
    with tempfile.TemporaryDirectory(prefix="stackbuild-bench.") as tmp:
        root = Path(tmp)
        stacks = root / "stacks"
        shutil.copytree(
            ROOT / "stacks" / "reference",
            stacks / "reference",
            ignore=shutil.ignore_patterns("build", "__pycache__", "*.egg-info"),
        )
        manifest = (ROOT / "stacks" / "reference.yaml").read_text().replace("name: reference", f"name: {STACK}")
        (stacks / f"{STACK}.yaml").write_text(manifest)
        print("bench: locking and preparing the base images (not timed)", file=sys.stderr)
        stackbuild(root, "lock", STACK)
        stackbuild(root, "build", STACK, "--no-smoke")  # ensures base images exist
        plan = sh(
            sys.executable, "-m", "builder", "--root", str(root), "plan", STACK, "--json", env={"PYTHONPATH": str(ROOT)}
        )
        base_key = next(s["key"] for s in json.loads(plan.stdout)["stages"] if s["stage"] == "base-devel")
        base_image = f"stackbuild/stage/base-devel:{base_key}"
        # The baseline context: the same sources plus the toolkit installer.
        shutil.copy(ROOT / "bench" / "baseline.Dockerfile", stacks / "baseline.Dockerfile")
        sh(
            sys.executable,
            str(stacks / "reference" / "toolkit" / "pack.py"),
            "--arch",
            "x86_64",
            "--output-dir",
            str(stacks / "dist"),
        )

        def make_cold() -> None:
            for tag in engine.tags("stackbuild/stage/*"):
                if not tag.split(":")[0].endswith(("base-devel", "base-runtime")):
                    engine.remove(tag)
            engine.remove(BASELINE_TAG)
            engine.client.images.prune(filters={"dangling": True})

        rows = []
        make_cold()
        rows.append(("cold build", stackbuild(root, "build", STACK, "--no-smoke"), baseline(stacks, base_image)))
        rows.append(("no-op rebuild", stackbuild(root, "build", STACK, "--no-smoke"), baseline(stacks, base_image)))
        touch(stacks / "reference" / "harness" / "harness" / "__init__.py")
        rows.append(("touch harness", stackbuild(root, "build", STACK, "--no-smoke"), baseline(stacks, base_image)))
        touch(stacks / "reference" / "ascend-c" / "src" / "tile.c")
        rows.append(("touch ascend-c", stackbuild(root, "build", STACK, "--no-smoke"), baseline(stacks, base_image)))
        engine.remove(BASELINE_TAG)
        for tag in engine.tags(f"stackbuild/{STACK}"):
            engine.remove(tag)

    info = engine.client.info()
    machine = (
        f"{platform.machine()}, {os.cpu_count()} cores, {info['MemTotal'] / 2**30:.0f} GiB, "
        f"Docker {info['ServerVersion']} ({info['Driver']}), Python {platform.python_version()}"
    )
    header = ("scenario", "stackbuild wall (s)", "stackbuild builder (s)", "docker build (s)")
    lines = [(name, f"{sb[0]:.2f}", f"{sb[1]:.2f}", f"{docker:.2f}") for name, sb, docker in rows]
    if args.markdown:
        print(f"Machine: {machine}\n")
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for line in lines:
            print("| " + " | ".join(line) + " |")
    else:
        print(f"machine: {machine}")
        widths = [max(len(r[i]) for r in [header, *lines]) for i in range(len(header))]
        for line in [header, *lines]:
            print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
