#!/usr/bin/env python3
"""Benchmark: how big the reference stack's images are, with its toolkit padded to a real size.

Not a test. Builds the reference stack in a scratch copy with the toolkit package padded to
--pad-mb MiB (a real CANN toolkit is gigabytes), then prints each image's size, its largest layer,
and the bytes of installer packages (*.run, *.zip) any of its layers holds. Run it at two commits
to compare them: it uses only the `stackbuild` command line and the docker CLI.

    python bench/image_sizes.py [--pad-mb 512] [--root CHECKOUT] [--manifest stacks/reference-8.3.yaml]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

STACK = "benchsize"
TITLE = '{{index .Config.Labels "org.opencontainers.image.title"}}'


def sh(*cmd: str, cwd: Path | None = None) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=cwd).stdout


def layers(image: str, scratch: Path) -> list[tuple[int, int]]:
    """(size, bytes of installer packages) of each layer of image, bottom first."""
    archive = scratch / "image.tar"
    with archive.open("wb") as out:
        subprocess.run(["docker", "save", image], stdout=out, check=True)
    found = []
    with tarfile.open(archive) as saved:
        manifest = saved.extractfile("manifest.json")
        assert manifest is not None
        for name in json.load(manifest)[0]["Layers"]:
            member = saved.getmember(name)
            handle = saved.extractfile(member)
            assert handle is not None
            with tarfile.open(fileobj=handle) as tar:
                packages = sum(m.size for m in tar if m.isfile() and m.name.endswith((".run", ".zip")))
            found.append((member.size, packages))
    archive.unlink()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pad-mb", type=int, default=512, help="toolkit padding in MiB (default %(default)s)")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent, help="the checkout")
    parser.add_argument("--manifest", type=Path, help="the stack to build (default: the checkout's reference.yaml)")
    args = parser.parse_args()
    checkout = args.root.resolve()
    revision = sh("git", "rev-parse", "--short", "HEAD", cwd=checkout).strip()
    with tempfile.TemporaryDirectory(prefix="stackbuild-sizes-") as tmp:
        root = Path(tmp)
        shutil.copytree(checkout / "stacks" / "reference", root / "stacks" / "reference", symlinks=True)
        source = args.manifest or checkout / "stacks" / "reference.yaml"
        # Any of the reference manifests (reference, reference-8.3; reference-8.5 at older commits).
        text = re.sub(r"(?m)^name: reference\S*$", f"name: {STACK}", source.read_text())
        # On pack.py's command lines only (sign.py, which wraps the .run, takes no --pad-mb).
        text = text.replace("reference/toolkit/pack.py ", f"reference/toolkit/pack.py --pad-mb {args.pad_mb} ")
        (root / "stacks" / f"{STACK}.yaml").write_text(text)
        env = dict(os.environ, PYTHONPATH=str(checkout))
        cli = [sys.executable, "-m", "builder", "--root", str(root)]
        # From the checkout, so `-m builder` is its own builder whatever the current directory holds.
        subprocess.run([*cli, "lock", STACK], check=True, env=env, capture_output=True, cwd=checkout)
        built = subprocess.run(
            [*cli, "build", STACK, "--no-smoke"], env=env, capture_output=True, text=True, cwd=checkout
        )
        if built.returncode != 0:
            print(built.stderr[-2000:], file=sys.stderr)
            return 1
        # The final tags the build printed, under the image prefix it was given (the default's before there was one).
        prefix = (env.get("STACKBUILD_IMAGE_PREFIX") or "stackbuild") + "/"
        tags = [line.split()[0] for line in built.stdout.splitlines() if line.startswith(prefix)]
        print(f"commit {revision}, {source.name}, toolkit padded to {args.pad_mb} MiB")
        print("| image | size (MB) | layers | largest layer (MB) | installer bytes in layers (MB) |")
        print("|---|---|---|---|---|")
        for tag in tags:
            listing = layers(tag, root)
            size = int(sh("docker", "image", "inspect", "--format", "{{.Size}}", tag))
            largest = max(s for s, _ in listing)
            packages = sum(p for _, p in listing)
            # From the title label: the tags' suffixes moved (-devel before issue 24, -runtime after).
            title = sh("docker", "image", "inspect", "--format", TITLE, tag)
            kind = "devel" if title.strip().endswith(" devel image") else "runtime"
            print(f"| {kind} | {size / 1e6:.0f} | {len(listing)} | {largest / 1e6:.0f} | {packages / 1e6:.0f} |")
            sh("docker", "rmi", tag)
    return 0


if __name__ == "__main__":
    sys.exit(main())
