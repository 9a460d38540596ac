"""What a stage's build reads of each parent's image, from its Dockerfile: everything of the parent it
is FROM, only the copied paths of those it copies from. A child may build on a parent's image as
built, before it is normalised, when none of the files normalising changes there is among them."""

from __future__ import annotations

import json
import posixpath
import shlex
from collections.abc import Collection

from builder.plan.parsed import instructions

EVERYTHING = "/"
UNREAD = frozenset("*?[$")  # a wildcard or a variable: what it names is not known here

Reads = tuple[tuple[str, tuple[str, ...]], ...]  # (parent, paths read in its image), in parent order


def parent_reads(dockerfile: str, parents: tuple[str, ...]) -> Reads:
    """For each parent, the paths the Dockerfile reads in its image: "/" for a parent a stage is
    FROM, or that is used in a way not read here (a mount, a wildcard); the sources of its
    `COPY --from=<parent>` otherwise."""
    read: dict[str, set[str]] = {p: set() for p in parents}
    for kind, value, _ in instructions(dockerfile):
        if kind == "FROM" and (image := _from_image(value)) in read:
            read[image].add(EVERYTHING)
        elif kind in ("COPY", "ADD") and (copied := _copied(value)) is not None and copied[0] in read:
            read[copied[0]].update(copied[1])
        elif kind == "RUN" and "--mount=" in value:
            for parent in read:  # a mount from a parent: all of it, to be safe
                if f"from={parent}" in value:
                    read[parent].add(EVERYTHING)
    return tuple((p, (EVERYTHING,) if EVERYTHING in read[p] else tuple(sorted(read[p]))) for p in parents)


def _copied(value: str) -> tuple[str, list[str]] | None:
    """A `COPY --from=` instruction's parent and source paths (a wildcard source reads everything)."""
    rest, flags = value.strip(), {}
    while rest.startswith("--"):
        word, _, rest = rest.partition(" ")
        name, _, flag_value = word.partition("=")
        flags[name] = flag_value
        rest = rest.lstrip()
    if "--from" not in flags or not rest:
        return None
    try:
        paths = json.loads(rest) if rest.startswith("[") else shlex.split(rest)
    except ValueError:
        return flags["--from"], [EVERYTHING]
    sources = [str(p) for p in paths[:-1]]
    return flags["--from"], [EVERYTHING if UNREAD & set(s) else s for s in sources] or [EVERYTHING]


def _from_image(value: str) -> str:
    """The image a FROM names, past its flags (--platform=...)."""
    words = [word for word in value.split() if not word.startswith("--")]
    return words[0] if words else ""


def sees(paths: Collection[str], changed: Collection[str], links: Collection[str] = ()) -> bool:
    """Whether reading paths (absolute, in an image) reads any of changed (relative to its root); a
    path through one of links (symbolic links of the layers changed is of, relative) is read whole."""
    for path in paths:
        inside = posixpath.normpath(path).strip("/")
        if inside in ("", ".") or _through(inside, links):
            if changed:
                return True
            continue
        if any(name == inside or name.startswith(inside + "/") for name in changed):
            return True
    return False


def _through(inside: str, links: Collection[str]) -> bool:
    """Whether a component of the path inside is one of links (COPY follows it)."""
    parts = inside.split("/")
    return any("/".join(parts[: n + 1]) in links for n in range(len(parts)))
