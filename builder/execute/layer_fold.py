"""Which of a built image's layers normalising sends, and as how many: the bottom ones its parents have
are not its own (inherited); a stage no other stage is FROM (its children copy files out of it) has
its own small layers folded into one, since the engine spends about as long on a layer of a few bytes
as on one of megabytes (fold_groups); and layers folded into one are merged into the entries of the
one layer that gives the same files (folded)."""

from __future__ import annotations

import copy
import hashlib
import posixpath
import tarfile

from builder.execute.layer_read import Member
from builder.execute.layer_rewrite import DROPPED, OPAQUE, WHITEOUT_PREFIX, is_whiteout, walk_order

# Own layers with less file data than this are folded together; a larger one stays a layer of its own,
# so a rebuild that reuses it need not send it again. The engine spends about 45 ms on each layer it
# loads; rewriting and loading a megabyte takes about 17 ms (a 57 MB fold, 1 s): a layer of 8 MiB sent
# again costs three layers' worth. A stage's system packages (g++: about 40 MB) stay apart from the
# components' copies above them, so a component's edit no longer sends them again.
FOLD_BELOW = 8 << 20


def inherited(diff_ids: list[str], parent_layers: frozenset[str]) -> int:
    """How many of an image's bottom layers are its parent's (the image it was built FROM), when
    which parent that is is not known (a base on a pinned image): those up to the first its parents
    lack. Every layer above is the stage's own, even one with the same bytes as a parent's (an empty
    layer, a step that changed nothing)."""
    return next((index for index, diff_id in enumerate(diff_ids) if diff_id not in parent_layers), len(diff_ids))


def fold_groups(layers: list[list[Member]]) -> list[list[int]]:
    """Own layers (by position) grouped into the layers sent: each run of small layers one, each layer
    of FOLD_BELOW bytes of file data or more alone."""
    groups: list[list[int]] = []
    small_before = False
    for position, members in enumerate(layers):
        # What is written of it: not what normalising leaves out (its size may differ between builds).
        kept = (member for member, _ in members if member.isfile() and not _left_out(member.name))
        small = sum(member.size for member in kept) < FOLD_BELOW
        if small and small_before:
            groups[-1].append(position)
        else:
            groups.append([position])
        small_before = small
    return groups


def _left_out(name: str) -> bool:
    name = name.removeprefix("./")
    return bool(DROPPED.match(name)) or is_whiteout(name)


def folded_away(own: range, groups: list[list[int]]) -> frozenset[int]:
    """The built layers folded into the one above (each group's but its top)."""
    return frozenset(own[n] for group in groups for n in group[:-1])


def sent_path(paths: list[str], built: list[str], own: range, group: list[int]) -> str:
    """A sent layer's path in the load's manifest: its own when it is one layer; named by the layers
    folded into it otherwise (the same layer may also be sent alone, or in another fold)."""
    if len(group) == 1:
        return paths[own[group[0]]]
    return f"{hashlib.sha256(' '.join(built[own[n]] for n in group).encode()).hexdigest()}/layer.tar"


def merged_members(layers: list[list[Member]]) -> list[Member]:
    return folded(layers) if len(layers) > 1 else layers[0]


def folded(layers: list[list[Member]]) -> list[Member]:
    """Layers (bottom first) as the one layer that gives the same files applied over what lies below
    them: a later entry replaces an earlier one (a directory's children go with it when it is
    replaced by a file); a whiteout removes what the layers before it added, and stays (what it hides
    may lie below them); a directory made again where one was removed or replaced gets an opaque
    marker (what lies below stays hidden); a hard link whose file a later layer replaced or removed is
    written as a file with the data it had."""
    merged = _Tree()
    linked: dict[str, Member] = {}  # a hard link -> the file it named when it was made
    for members in layers:
        named = [(member.name.removeprefix("./"), member, opener) for member, opener in members]
        for name, _, _ in named:  # a layer's whiteouts are about the layers below it
            parent, base = posixpath.split(name)
            if base == OPAQUE:
                merged.drop_under(parent)
            elif base.startswith(WHITEOUT_PREFIX):
                merged.drop(posixpath.join(parent, base.removeprefix(WHITEOUT_PREFIX)))
        files = {name: (member, opener) for name, member, opener in named}
        for name, member, opener in named:
            if not posixpath.basename(name).startswith(WHITEOUT_PREFIX):
                _replace(merged, name, member)
                if member.islnk() and (target := files.get(member.linkname.removeprefix("./"))) is not None:
                    linked[name] = target
            merged.put(name, (member, opener))
    _unlinked(merged, linked)
    return list(merged.entries.values())


def _unlinked(merged: _Tree, linked: dict[str, Member]) -> None:
    """The hard links whose file a later layer replaced or removed, as that file with the data it had:
    the first of them (in walk order) holding it, the others linked to that one."""
    broken: dict[int, tuple[Member, list[str]]] = {}  # by the file they named
    for name, target in linked.items():
        link = merged.entries.get(name)
        if link is None or not link[0].islnk():  # the link itself was replaced or removed
            continue
        now = merged.entries.get(link[0].linkname.removeprefix("./"))
        if now is None or now[0] is not target[0]:
            broken.setdefault(id(target[0]), (target, []))[1].append(name)
    for (info, opener), names in broken.values():
        first, *others = sorted(names, key=walk_order)
        file = copy.copy(info)
        file.name = first
        merged.put(first, (file, opener))
        for name in others:
            again = copy.copy(info)
            again.name, again.type, again.linkname, again.size = name, tarfile.LNKTYPE, first, 0
            merged.put(name, (again, None))


def _replace(merged: _Tree, name: str, member: tarfile.TarInfo) -> None:
    """What an entry of a later layer takes the place of: a whiteout of its name, and what was under
    it unless it is a directory; a directory made where one was removed or replaced hides what lies
    below (an opaque marker)."""
    parent, base = posixpath.split(name)
    hidden = merged.pop(posixpath.join(parent, WHITEOUT_PREFIX + base)) is not None
    before = merged.entries.get(name)
    if not member.isdir():
        merged.drop_under(name)
    elif hidden or (before is not None and not before[0].isdir()):
        marker = tarfile.TarInfo(posixpath.join(name, OPAQUE))
        merged.put(marker.name, (marker, None))


class _Tree:
    """Entries by name, and each directory's children (named or implied), so a subtree is dropped in
    the time its size takes, not the whole layer's."""

    def __init__(self) -> None:
        self.entries: dict[str, Member] = {}
        self.children: dict[str, set[str]] = {}

    def put(self, name: str, entry: Member) -> None:
        self.entries[name] = entry
        while name:
            parent = posixpath.dirname(name)
            known = self.children.setdefault(parent, set())
            if name in known:
                break
            known.add(name)
            name = parent

    def pop(self, name: str) -> Member | None:
        entry = self.entries.pop(name, None)
        if entry is not None and not self.children.get(name):
            self.children.get(posixpath.dirname(name), set()).discard(name)
        return entry

    def drop(self, name: str) -> None:
        self.drop_under(name)
        self.pop(name)

    def drop_under(self, directory: str) -> None:
        below = list(self.children.pop(directory, ()))
        while below:
            name = below.pop()
            self.entries.pop(name, None)
            below.extend(self.children.pop(name, ()))
