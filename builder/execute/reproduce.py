"""`stackbuild verify-reproducible`: the stack built twice from nothing, every step run again (no
builder cache, no stage image reused), the second time from a fresh clone of the checkout at another
path with another origin URL (at another commit of the same lock when asked), every file touched,
another umask and time zone, and on another engine when one is given;
then every stage's image id compared, and for a stage that differs, the files that differ and how
(content, mode, mtime, owner, type), as diffoci does."""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import multiprocessing
import os
import pickle
import shutil
import signal
import tarfile
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import IO, Any, TypeVar, cast

from builder.engine import BuildEngine, Engine, EngineError, connect
from builder.execute import chain
from builder.execute.chain import Request
from builder.execute.layer_read import unpack
from builder.execute.stage_image import StageImages
from builder.inputs.project import clone_checkout, origin_of, toplevel
from builder.model.errors import InputError, StackbuildError
from builder.model.names import repository
from builder.model.say import Say
from builder.model.settings import RegistryCredentials
from builder.plan.plan_model import Plan, Stage
from builder.store.cache import Cache

VERIFY = "verify"  # under the image prefix (builder.model.names)
OTHER_TZ = "Asia/Shanghai"
T = TypeVar("T")
# The second build's engine, as connect() takes it: its URL (None: the default one), builder and login.
EngineAt = tuple[str | None, str, RegistryCredentials | None]
PR_SET_PDEATHSIG = 1  # linux/prctl.h


@dataclass(frozen=True)
class Verdict:
    stage: str
    first: str
    second: str
    differences: tuple[str, ...] = ()

    @property
    def same(self) -> bool:
        return self.first == self.second


def fresh_build(builds: StageImages, run: str, say: Say) -> dict[str, str]:
    """Every stage of the builds' plan built again from nothing, in order, each from this run's own
    parents (tagged <prefix>/verify/<run>-<stage>:<key>); stage -> image id."""
    plan = builds.plan
    images: dict[str, str] = {}

    def ref(name: str) -> str:
        return verify_tag(run, plan.stages[name])

    for stage in plan.order():
        started = time.monotonic()
        parents = {p: ref(p) for p in stage.parents}
        log_file = builds.log_file(stage).with_suffix(f".verify-{run}.log")
        images[stage.name] = builds.build_untagged(stage, log_file, parents, f"the {run} build failed", fresh=True)
        builds.engine.tag(images[stage.name], ref(stage.name))
        say(f"[stackbuild] {run} build: {stage.name} {images[stage.name][7:19]} ({time.monotonic() - started:.1f}s)")
    return images


def verify_tag(run: str, stage: Stage) -> str:
    return f"{repository(stage.image_prefix, VERIFY, f'{run}-{stage.name}')}:{stage.key}"


def forget(engine: Engine, plan: Plan, run: str) -> None:
    """The run's tags removed (an image another tag names stays)."""
    for stage in plan.order():
        with contextlib.suppress(EngineError):
            engine.remove(verify_tag(run, stage))


@dataclass(frozen=True)
class Elsewhere:
    """The checkout at another path: its manifest and lock there, and how it was made."""

    manifest: Path
    lock: Path
    how: str


@contextlib.contextmanager
def elsewhere(manifest: Path, lock: Path, at: str | None) -> Iterator[Elsewhere]:
    """The checkout at another path with every file touched now: a fresh clone with another origin
    URL when the manifest and lock are in a git checkout (at the commit `at` names; else at HEAD with
    the working tree's changes), else a copy of the manifest's directory (the lock read where it is)."""
    with tempfile.TemporaryDirectory(prefix="stackbuild-verify-") as tmp:
        top = toplevel(manifest.parent)
        inside = top is not None and all(p.resolve().is_relative_to(top.resolve()) for p in (manifest, lock))
        if top is not None and inside and (at or origin_of(top).revision):
            clone = clone_checkout(top, Path(tmp) / "clone", at)
            changes = " and the working tree's changes" if clone.changes else ""
            how = f"a clone at {clone.top} (origin {clone.origin}, commit {clone.commit[:12]}{changes})"
            manifest_there, lock_there = (clone.top / p.resolve().relative_to(top.resolve()) for p in (manifest, lock))
            there = Elsewhere(manifest_there, lock_there, how)
        elif at:
            raise InputError(f"--at {at}: {manifest} and {lock} are not in one git checkout with a commit")
        else:
            copy = Path(tmp) / "checkout"
            shutil.copytree(manifest.parent, copy, symlinks=True)
            there = Elsewhere(copy / manifest.name, lock, f"a copy of {manifest.parent} at {copy} (not a git checkout)")
        for path in [Path(tmp), *Path(tmp).rglob("*")]:
            os.utime(path, follow_symlinks=False)
        yield there


@dataclass(frozen=True)
class Conditions:
    """What the second build runs under: what stackbuild makes must not depend on either."""

    umask: int = 0o077
    zone: str = OTHER_TZ

    def __str__(self) -> str:
        return f"umask {self.umask:03o}, TZ {self.zone}"


def first_build(plan: Plan, engine: BuildEngine, cache: Cache, log_dir: Path, say: Say) -> dict[str, str]:
    """The first build from nothing, in this process, with the compile cache: stage -> image id."""
    return fresh_build(StageImages(plan, engine, cache, log_dir, compile_cache=True), "first", say)


def second_build(
    request: Request, first: Plan, engine: EngineAt, log_dir: Path, say: Say, conditions: Conditions
) -> dict[str, str]:
    """The request prepared, planned and built from nothing on the engine connect(*engine) makes, in a
    process of its own under conditions: stage -> image id. A plan whose stage keys are not first's is
    refused before anything is built."""
    keys = {name: stage.key for name, stage in first.stages.items()}
    return under(conditions, _second, request, keys, engine, log_dir, say)


def under(conditions: Conditions, function: Callable[..., T], *args: object) -> T:
    """function(*args) in a spawned process under conditions: umask and TZ belong to a process, and this
    one's threads (and its caller) must not see them change. Its errors are raised here (an unexpected
    one with the child's traceback as its cause); the process ends with this one (interrupted, killed or
    failing here, it is terminated; it dies with its parent)."""
    spawned = multiprocessing.get_context("spawn")
    answer, send = spawned.Pipe(duplex=False)
    child = spawned.Process(target=_child, args=(send, os.getpid(), conditions, function, args))
    child.start()
    send.close()  # the child's end: once it exits, recv() sees end of file instead of waiting
    try:
        ok, value, where = answer.recv()
    except EOFError:
        child.join()
        raise StackbuildError(
            f"the second build's process ended without an answer (exit code {child.exitcode})"
        ) from None
    except BaseException:  # interrupted here: it goes now, not once its build is done
        child.terminate()
        raise
    finally:
        answer.close()
        child.join(timeout=30)  # it exits once it has answered; one that does not is ended
        if child.is_alive():
            child.terminate()
            child.join()
    if ok:
        return cast(T, value)
    if isinstance(value, StackbuildError):
        raise value
    raise value from RemoteTraceback(where)


class RemoteTraceback(Exception):
    """The traceback of an error raised in the spawned process, as its text."""


def _child(
    send: Connection, parent: int, conditions: Conditions, function: Callable[..., object], args: tuple[object, ...]
) -> None:
    with contextlib.suppress(OSError, AttributeError):  # Linux: SIGTERM when the parent (thread) dies
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # it died while this one started, before the signal was asked for
        os._exit(1)
    os.umask(conditions.umask)
    os.environ["TZ"] = conditions.zone
    time.tzset()
    try:
        result: tuple[bool, object, str] = (True, function(*args), "")
    except BaseException as err:  # sent back to be raised in the parent
        result = (False, err, traceback.format_exc())
    try:
        pickle.loads(pickle.dumps(result))
    except Exception as err:  # what cannot cross back is said in words
        result = (False, StackbuildError(f"the second build's result cannot be sent back: {err}"), "")
    send.send(result)


def _second(request: Request, keys: dict[str, str], engine: EngineAt, log_dir: Path, say: Say) -> dict[str, str]:
    plan = chain.prepared(request, say)[1]
    if moved := [name for name, key in keys.items() if plan.stages[name].key != key]:
        raise StackbuildError(
            f"the copy of the checkout gives other stage keys ({', '.join(moved)}): its inputs depend on where "
            "or when they are read"
        )
    return fresh_build(StageImages(plan, connect(*engine), request.cache, log_dir), "second", say)


def _image(engine: BuildEngine, image_id: str, scratch: Path) -> tuple[dict[str, Any], list[Path]]:
    """An image's config and its layer tars (saved into scratch), bottom first."""
    with engine.save(image_id) as saved:
        unpacked = unpack(saved, scratch)
    return unpacked.config, [unpacked.files[path] for path in unpacked.paths]


def _sha256(stream: IO[bytes]) -> str:
    digest = hashlib.sha256()
    for chunk in iter(lambda: stream.read(1 << 20), b""):
        digest.update(chunk)
    return digest.hexdigest()


def _entries(layer: Path) -> dict[str, tuple[tarfile.TarInfo, str | None]]:
    """A layer's entries with the sha256 of each file's data (read in chunks, never whole)."""
    found = {}
    with tarfile.open(layer) as tar:
        for member in tar:
            handle = tar.extractfile(member) if member.isfile() else None
            found[member.name] = (member, _sha256(handle) if handle else None)
    return found


def _how(first: tarfile.TarInfo, data_a: str | None, second: tarfile.TarInfo, data_b: str | None) -> list[str]:
    how = [] if data_a == data_b else ["content"]
    how += [
        what
        for what, a, b in (
            ("type", first.type, second.type),
            ("mode", first.mode, second.mode),
            ("mtime", first.mtime, second.mtime),
            ("owner", (first.uid, first.gid), (second.uid, second.gid)),
            ("link", first.linkname, second.linkname),
        )
        if a != b
    ]
    return how


def differences(first: tuple[BuildEngine, str], second: tuple[BuildEngine, str], limit: int = 40) -> tuple[str, ...]:
    """What differs between two images: config fields, then per differing layer each file and how."""
    with tempfile.TemporaryDirectory(prefix="stackbuild-diff-") as tmp:
        (Path(tmp) / "a").mkdir()
        (Path(tmp) / "b").mkdir()
        config_a, layers_a = _image(*first, Path(tmp) / "a")
        config_b, layers_b = _image(*second, Path(tmp) / "b")
        found = [
            f"config {key}"
            for key in sorted(config_a.keys() | config_b.keys())
            if key != "rootfs" and config_a.get(key) != config_b.get(key)
        ]
        if len(layers_a) != len(layers_b):
            found.append(f"layers: {len(layers_a)} -> {len(layers_b)}")
        ids_a, ids_b = config_a["rootfs"]["diff_ids"], config_b["rootfs"]["diff_ids"]
        for index, (a, b) in enumerate(zip(layers_a, layers_b, strict=False)):
            if ids_a[index] == ids_b[index]:  # the same layer (the diff id is its tar's sha256)
                continue
            entries_a, entries_b = _entries(a), _entries(b)
            for name in sorted(entries_a.keys() | entries_b.keys()):
                if name not in entries_b or name not in entries_a:
                    found.append(f"layer {index}: {name}: only in the {'first' if name in entries_a else 'second'}")
                elif how := _how(*entries_a[name], *entries_b[name]):
                    found.append(f"layer {index}: {name}: {', '.join(how)}")
    return tuple(found[:limit]) + ((f"... and {len(found) - limit} more",) if len(found) > limit else ())


def compare(
    plan: Plan, first: tuple[BuildEngine, dict[str, str]], second: tuple[BuildEngine, dict[str, str]]
) -> list[Verdict]:
    verdicts = []
    for name in plan.stages:
        a, b = first[1][name], second[1][name]
        found = () if a == b else differences((first[0], a), (second[0], b))
        verdicts.append(Verdict(name, a, b, found))
    return verdicts
