"""What a component's build adds to its install paths, staged where its dependents copy it from.

`before RECORD PATH...` records what the install paths hold before the build steps (the toolkit's
and the parents' files); `stage RECORD DIR PATH...` puts what the steps added or changed there
under DIR, at the same absolute paths (hard links: no byte twice in the layer; directories keep
their modes). Dependents and the final images then copy DIR, so a parent's tree is never copied
again. Standard library only: it runs in the stage's python3.
"""

from __future__ import annotations

import json
import os
import shutil
import sys


def entries(roots: list[str]) -> dict[str, list[int]]:
    """path -> what tells a file apart (type and mode, size, mtime, inode), under each root, no link followed."""
    found: dict[str, list[int]] = {}
    for root in roots:
        if not os.path.lexists(root):
            continue
        found[root] = _signature(root)
        if os.path.isdir(root) and not os.path.islink(root):
            for parent, dirs, files in os.walk(root):
                for name in dirs + files:
                    path = os.path.join(parent, name)
                    found[path] = _signature(path)
    return found


def _signature(path: str) -> list[int]:
    st = os.lstat(path)
    return [st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino]


def _make_parents(path: str, staged_root: str) -> None:
    """The directories above path in the staging tree, with the real ones' modes."""
    parts = path.strip("/").split("/")[:-1]
    current = ""
    for part in parts:
        current += "/" + part
        target = staged_root + current
        if not os.path.isdir(target):
            os.mkdir(target)
            os.chmod(target, os.stat(current).st_mode & 0o7777)


def stage(record: str, staged_root: str, roots: list[str]) -> None:
    with open(record) as f:
        before = json.load(f)
    os.makedirs(staged_root, exist_ok=True)
    added = 0
    for path, signature in sorted(entries(roots).items()):
        if before.get(path) == signature:
            continue
        _make_parents(path, staged_root)
        target = staged_root + path
        if os.path.islink(path):
            os.symlink(os.readlink(path), target)
        elif os.path.isdir(path):
            if not os.path.isdir(target):
                os.mkdir(target)
            os.chmod(target, os.lstat(path).st_mode & 0o7777)
        else:
            try:
                os.link(path, target)
            except OSError:  # another file system: a copy
                shutil.copy2(path, target)
        added += 1
    for root in roots:  # every install path is there, added to or not, for the runtime image's copies
        if os.path.isdir(root) and not os.path.islink(root):
            _make_parents(root + "/x", staged_root)
    os.remove(record)
    print(f"stackbuild: installs: {added} new or changed entries under {', '.join(roots)}")


def real_parents(roots: list[str]) -> None:
    """Each install path's directory is a real one: staged under a link's name, its files would be
    copied over the link in the dependents."""
    for root in roots:
        parent = os.path.dirname(root)
        if os.path.lexists(parent) and os.path.realpath(parent) != parent:
            real = os.path.join(os.path.realpath(parent), os.path.basename(root))
            sys.exit(f"stackbuild: install path {root} is under a link: name the real path ({real}) in the manifest")


def main(argv: list[str]) -> None:
    real_parents(argv[2:] if argv[0] == "before" else argv[3:])
    if argv[0] == "before":
        with open(argv[1], "w") as f:
            json.dump(entries(argv[2:]), f)
    else:
        stage(argv[1], argv[2], argv[3:])


if __name__ == "__main__":
    main(sys.argv[1:])
