"""Two components must not add the same file: the files under their install paths, compared.

Sharing a directory (cann-8.5.0/) is fine. A component's image also holds the toolkit's files
and its dependencies' installs (copied in before its build): those unchanged are not its own. A
file two components added (both made it, or a dependent rewrote a dependency's) would otherwise
be decided silently by the order of COPY lines in the final images.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

from builder.engine import Engine


def installed_files(engine: Engine, image: str, paths: Sequence[str]) -> dict[str, str]:
    """file -> sha256 of every regular file under paths in image."""
    script = f"find {' '.join(shlex.quote(p) for p in paths)} -type f -exec sha256sum {{}} + 2>/dev/null; true"
    out = engine.run(image, ["sh", "-c", script])
    found = {}
    for line in out.output.splitlines():
        sha, _, path = line.partition("  ")
        if len(sha) == 64 and path:
            found[path] = sha
    return found


def added_files(
    listings: Mapping[str, Mapping[str, str]], toolkit: Mapping[str, str], needs: Mapping[str, set[str]]
) -> dict[str, dict[str, str]]:
    """What each component added under its install paths: not the toolkit's files, not a dependency's
    (both carried into its image unchanged)."""
    added = {}
    for cid, files in listings.items():
        carried = [listings[d] for d in needs.get(cid, set()) if d in listings]
        added[cid] = {
            path: sha
            for path, sha in files.items()
            if toolkit.get(path) != sha and not any(dep.get(path) == sha for dep in carried)
        }
    return added


def collisions(added: Mapping[str, Mapping[str, str]]) -> list[str]:
    """One line per file two components both added."""
    owner: dict[str, str] = {}
    problems = []
    for cid, files in added.items():
        for path in sorted(files):
            if path in owner:
                problems.append(f"{path} is installed by both {owner[path]} and {cid}")
            else:
                owner[path] = cid
    return problems
