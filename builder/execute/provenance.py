"""The provenance record of a build: what made the final images (builder version, lock digest, each
stage's key and image, the bases), from which checkout (origin URL and commit), and when and where,
written next to the build's logs, outside the images: only what the lock decides goes inside them
(/etc/stackbuild/stack.lock.json and labels)."""

from __future__ import annotations

import datetime
import json
import platform
from pathlib import Path
from typing import Any

from builder import __version__
from builder.execute.pipeline import Tagged
from builder.inputs import base_kinds
from builder.inputs.project import Origin
from builder.lock.locked import Lock
from builder.store.files import write_atomic


def provenance(tagged: Tagged, lock: Lock, engine: str, seconds: float, origin: Origin) -> dict[str, Any]:
    built = tagged.built
    plan = built.plan
    section = lock.architectures.get(plan.arch)
    # The image a pulled base names, or the tarballs of a base made here.
    tarballs = sorted(section.base.items()) if section is not None else []
    if (image := base_kinds.kind_of(lock.base).pinned_image(lock.base)) is not None:
        bases = {"image": image}
    else:
        bases = {f"{flavor} tarball sha256": tarball.sha256 for flavor, tarball in tarballs}
    return {
        "builder": {"name": "stackbuild", "version": __version__},
        "stack": plan.stack,
        "arch": plan.arch.value,
        "lock_sha256": lock.lock_sha256,
        "source_date_epoch": lock.base.source_date_epoch,
        "bases": bases,
        "stages": {
            name: {"key": stage.key, "image": built.image_ids.get(name), "built_here": name in built.built}
            for name, stage in plan.stages.items()
        },
        "images": {tag: built.image_ids[final] for final, tag in tagged.tags.items()},
        # The checkout the stack's definition came from: here, not in the images (their bytes are the lock's).
        "source": {"origin": origin.source, "commit": origin.revision},
        "build": {
            "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "seconds": round(seconds, 2),
            "host": platform.node(),
            "engine": engine,
        },
    }


def write_provenance(directory: Path, record: dict[str, Any]) -> Path:
    """<directory>/<stack>/<arch>.json, the last build's; its path."""
    path = directory / str(record["stack"]).lower() / f"{record['arch']}.json"
    write_atomic(path, json.dumps(record, indent=2) + "\n")
    return path
