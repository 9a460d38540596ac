"""Reading and writing lockfiles (`lockfiles/<stack>.lock.json`)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from builder.lock.locked import LOCK_VERSION, Lock
from builder.lock.migrate import migrate
from builder.model.errors import InputError, StackbuildError
from builder.store.files import write_atomic


def read(path: Path) -> Lock:
    try:
        text = path.read_text()
    except FileNotFoundError as err:
        raise InputError(f"{path}: no lockfile: run `stackbuild lock {path.name.removesuffix('.lock.json')}`") from err
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"{path}: cannot read the lockfile: {err}") from err
    return parse(text, str(path))


def parse(text: str, path: str) -> Lock:
    """A lockfile's text checked and migrated; path names it in errors (a file, or where in an image)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"{path}: cannot read the lockfile: {err}") from err
    if not isinstance(data, dict):
        raise InputError(f"{path}: a lockfile is a JSON object: relock")
    try:
        data, migrated_from = migrate(data, LOCK_VERSION)
        lock = Lock.model_validate(data)
    except (KeyError, TypeError) as err:
        raise InputError(f"{path}: malformed lockfile (missing {err}): relock") from err
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(f"{path}: malformed lockfile: {where}: {first['msg']}") from err
    except StackbuildError as err:
        raise type(err)(f"{path}: {err}") from err
    if migrated_from is not None:
        return lock.sealed()  # checked against its own version's digest before migrating
    if lock.lock_sha256 != lock.content_sha256():
        raise InputError(f"{path}: lock_sha256 does not match its content (edited by hand?): relock")
    return lock


def text(lock: Lock) -> str:
    """The lockfile's text, as written (and as embedded in the final images)."""
    return json.dumps(lock.sealed().model_dump(mode="json"), indent=2) + "\n"


def write(lock: Lock, path: Path) -> None:
    write_atomic(path, text(lock))
