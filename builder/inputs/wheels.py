"""Python packages: requirement lines resolved to exact wheels for the stack's Python and each
architecture, by `pip download --platform --python-version --only-binary=:all:` (pip resolves
for the target, not for the Python running it), pinned by sha256; the wheels go into the cache
and travel in the build context, installed with `--no-index --require-hashes`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from builder.inputs.first_index import Chosen, Source, first_index
from builder.inputs.site import SiteConfig
from builder.manifest.model import Manifest
from builder.model.arch import Arch
from builder.model.errors import StackbuildError
from builder.store.cache import Cache
from builder.store.http import must_answer, redact

# The glibc each base ships: the newest manylinux wheels it runs. Unknown bases get manylinux2014.
GLIBC_MINOR = {("debian", "12"): 36, ("debian", "13"): 41, ("ubuntu", "22.04"): 35, ("ubuntu", "24.04"): 39}
DEFAULT_GLIBC_MINOR = 17
Rewrite = Callable[[str], str]
_WHEEL = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[^-]+)-.+\.whl$")


class PythonPackageError(StackbuildError):
    pass


@dataclass(frozen=True)
class Wheel:
    name: str
    version: str
    file: str
    sha256: str
    index: str = ""  # of several indexes, the one the project came from (as the manifest gives it)


@dataclass(frozen=True)
class Target:
    """Who installs the wheels: the stack's Python on one architecture of one distribution."""

    python: str  # "3.11"
    arch: Arch
    glibc_minor: int

    @classmethod
    def of(cls, python: str, arch: Arch, os_name: str, os_version: str) -> Target:
        return cls(python, arch, GLIBC_MINOR.get((os_name, os_version), DEFAULT_GLIBC_MINOR))

    @classmethod
    def of_stack(cls, manifest: Manifest, arch: Arch) -> Target:
        platform = manifest.platform
        return cls.of(platform.python, arch, platform.os, platform.os_version)

    def pip_options(self) -> list[str]:
        machine = self.arch.value
        platforms = [f"manylinux_2_{minor}_{machine}" for minor in range(self.glibc_minor, 4, -1)]
        platforms += [
            f"manylinux2014_{machine}",
            f"manylinux2010_{machine}",
            f"manylinux1_{machine}",
            f"linux_{machine}",
        ]
        options = [f"--platform={p}" for p in platforms]
        abi = "cp" + self.python.replace(".", "")
        return [
            *options,
            f"--python-version={self.python}",
            "--implementation=cp",
            f"--abi={abi}",
            "--abi=abi3",
            "--abi=none",
        ]


Index = str | list[str]  # one index, or several in order (builder/inputs/first_index.py)


def index_of(manifest: Manifest, site: SiteConfig) -> Index:
    """Where the stack's Python packages come from: the site's index replaces the manifest's."""
    return site.python_index or manifest.python_index


def _is_url(index: str) -> bool:
    return bool(re.match(r"^[a-z][a-z0-9+.-]*://", index))


def index_options(index: str, manifest_dir: Path, rewrite: Rewrite) -> list[str]:
    """A URL is an index (PEP 503, site rewrites applied); anything else a wheelhouse directory
    (relative to the manifest)."""
    if _is_url(index):
        return [f"--index-url={rewrite(index)}"]
    return ["--no-index", f"--find-links={manifest_dir / index}"]


def _sources(indexes: Sequence[str], manifest_dir: Path, rewrite: Rewrite) -> list[Source]:
    return [Source(i, rewrite(i) if _is_url(i) else str(manifest_dir / i)) for i in indexes]


@contextmanager
def _where(index: Index, manifest_dir: Path, rewrite: Rewrite) -> Iterator[tuple[list[str], Chosen | None]]:
    """pip's index options for index; several indexes are one loopback index answering each project
    from the first that has it (what it chose: for the lock)."""
    if isinstance(index, str):
        yield index_options(index, manifest_dir, rewrite), None
        return
    with first_index(_sources(index, manifest_dir, rewrite)) as (url, chosen):
        yield [f"--index-url={url}"], chosen


def pip(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    # --isolated: the host's PIP_* variables and user config must not choose what is locked.
    command = [sys.executable, "-m", "pip", "--isolated", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env)


def resolve(
    requirements: Sequence[str],
    index: Index,
    manifest_dir: Path,
    target: Target,
    cache: Cache,
    rewrite: Rewrite = str,
) -> list[Wheel]:
    """The wheels requirements need on target (dependencies included), in the cache, sorted by name;
    with several indexes, each with the index its project came from."""
    if not requirements:
        return []
    for url in [i for i in ([index] if isinstance(index, str) else index) if _is_url(i)]:
        must_answer(rewrite(url), "python index", url)
    with cache.scratch.temp_dir() as dest, _where(index, manifest_dir, rewrite) as (options, chosen):
        done = pip(
            [
                "download",
                "--quiet",
                "--only-binary=:all:",
                f"--dest={dest}",
                *target.pip_options(),
                *options,
                "--",
                *requirements,
            ]
        )
        if done.returncode != 0:
            lines = [line for line in done.stderr.splitlines() if line.startswith("ERROR")] or done.stderr.splitlines()
            detail = redact_line(lines[0] if lines else f"pip exited with {done.returncode}")
            raise PythonPackageError(
                f"resolving {', '.join(requirements)} for Python {target.python} {target.arch}: {detail}"
            )
        wheels = []
        for path in sorted(dest.glob("*.whl")):
            found = _WHEEL.match(path.name)
            if found is None:
                raise PythonPackageError(f"unexpected wheel file name {path.name!r}")
            came_from = chosen.by_project.get(canonicalize_name(found["name"]), "") if chosen else ""
            wheels.append(Wheel(found["name"], found["version"], path.name, cache.add_file(path), came_from))
    return sorted(wheels, key=lambda w: w.name.lower())


def fetch(
    wheels: Sequence[Wheel], index: Index, manifest_dir: Path, target: Target, cache: Cache, rewrite: Rewrite = str
) -> None:
    """Wheels missing from the cache downloaded again, exactly the pinned files (pip checks the hashes),
    each from the index the lock says it came from."""
    missing = [w for w in wheels if not cache.has(w.sha256)]
    by_index: dict[str, list[Wheel]] = {}
    for wheel in missing:
        by_index.setdefault(wheel.index or (index if isinstance(index, str) else index[0]), []).append(wheel)
    for where, group in by_index.items():
        _fetch_from(group, index_options(where, manifest_dir, rewrite), where, target, cache)


def _fetch_from(missing: Sequence[Wheel], options: list[str], index: str, target: Target, cache: Cache) -> None:
    with cache.scratch.temp_dir() as tmp:
        pinned = tmp / "requirements.txt"
        pinned.write_text(requirements_text(missing))
        dest = tmp / "wheels"
        done = pip(
            [
                "download",
                "--quiet",
                "--no-deps",
                "--only-binary=:all:",
                "--require-hashes",
                f"--dest={dest}",
                *target.pip_options(),
                *options,
                "-r",
                str(pinned),
            ]
        )
        if done.returncode != 0:
            first = missing[0]
            raise PythonPackageError(
                f"{first.file} (locked) could not be downloaded again from {redact(index)}: "
                "point the site config's python_index at a wheelhouse that has it, or relock"
            )
        for wheel in missing:
            cache.add_file(dest / wheel.file, wheel.sha256)


def requirements_text(wheels: Sequence[Wheel]) -> str:
    return "".join(f"{w.name}=={w.version} --hash=sha256:{w.sha256}\n" for w in wheels)


def redact_line(line: str) -> str:
    return re.sub(r"[a-z][a-z0-9+.-]*://\S+", lambda m: redact(m.group(0)), line)
