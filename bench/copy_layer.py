#!/usr/bin/env python3
"""Is a layer that copies a tree into an image canonical as built (normalising holds it where the
engine wrote it, as it holds the toolkit's install layers) or must normalising rewrite and load it
again (the runtime image's copy of the toolkit tree, bench/RESULTS.md "The touch-toolkit gap")?

Two one-step images on the runtime base, each copying a tree of another image (its files dated to
the source date, as the toolkit's are) to /usr/local/Ascend: by `COPY --from`, as the runtime
template does, and by a step that bind-mounts the tree on /mnt (which the base has), copies it with
`cp -a` and dates what it changed, as the toolkit template's install steps do. Each is read with
stackbuild's own reading of the data root (normalise_dirs: whether its layer is canonical as built)
and its first entries are printed; both are removed after.

    python bench/copy_layer.py RUNTIME_BASE IMAGE_WITH_TREE [--tree /usr/share/doc] [--epoch 1704067200]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from builder.engine import connect  # noqa: E402
from builder.execute.layer_read import stored_members  # noqa: E402
from builder.execute.normalise import normalise_dirs  # noqa: E402

# The toolkit template's dating line (builder/plan/templates/toolkit.Dockerfile.j2), after a copy.
DATED = (
    "RUN --mount=type=bind,from={image},source={tree},target=/mnt \\\n"
    "    started=$(( $(date +%s%N) - 100000000 )) \\\n"
    " && cp -a /mnt /usr/local/Ascend \\\n"
    " && find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path /mnt -o -path /etc/hosts "
    "-o -path /etc/hostname \\\n"
    '      -o -path /etc/resolv.conf \\) -prune -o -newerct "@${{started::-9}}.${{started: -9}}" '
    '-newermt "@{epoch}" -print0 \\\n'
    '    | xargs -0r touch -h -d "@{epoch}"\n'
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base", help="the runtime base image")
    parser.add_argument("image", help="an image holding a tree dated to the source date")
    parser.add_argument("--tree", default="/usr/share/doc", help="the tree to copy")
    parser.add_argument("--epoch", type=int, default=1704067200, help="the source date")
    args = parser.parse_args()
    steps = {
        "COPY --from (the runtime template's)": f'COPY --from={args.image} ["{args.tree}", "/usr/local/Ascend"]\n',
        "bind mount on /mnt, cp -a, dated (the toolkit steps' way)": 'SHELL ["/bin/bash", "-o", "pipefail", "-c"]\n'
        + DATED.format(image=args.image, tree=args.tree, epoch=args.epoch),
    }
    engine = connect(builder="buildkit")
    below = list(engine.inspect(args.base).layers)
    for name, step in steps.items():
        with tempfile.TemporaryDirectory(prefix="stackbuild-copy-layer.") as context:
            (Path(context) / "Dockerfile").write_text(f"FROM {args.base}\n{step}")
            iid = Path(context) / "iid"
            command = ["/usr/bin/docker", "build", "-q", "--network", "none", "--iidfile", str(iid), context]
            subprocess.run(command, check=True, capture_output=True, env={**os.environ, "DOCKER_BUILDKIT": "1"})
            image = iid.read_text().strip()
        try:
            found = engine.layer_dirs(image)
            if found is None:
                sys.exit("copy_layer: the engine's data root cannot be read here (not a local overlay2 engine)")
            normal = normalise_dirs(found, frozenset(below), args.epoch, len(below))
            if normal is None:
                sys.exit("copy_layer: its layers cannot be read from the data root")
            for sent in normal.sent:
                print(f"{name}: own layer {sent.index}, canonical as built: {sent.canonical}")
            members, _ = stored_members(found.layers[-1])
            for info, _ in members[:4]:
                print(f"    {info.name:40} mtime {info.mtime}")
        finally:
            subprocess.run(["/usr/bin/docker", "rmi", image], capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
