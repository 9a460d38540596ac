"""The lock meets its own wheels' Requires-Dist: each pinned wheel's requirements on the other
projects a component installs, read from the wheel's METADATA, hold for the versions the lock pins
on that architecture (torch-npu 2.9.0 on x86_64 requires torch==2.9.0+cpu; a lock with PyPI's
torch 2.9.0 there would install a pair that fails at import)."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass

from packaging.markers import default_environment
from packaging.metadata import Metadata
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from builder.lock.locked import Lock, LockedWheel
from builder.model.arch import Arch
from builder.store.cache import Cache


@dataclass(frozen=True)
class Unmet:
    problems: list[str]  # a requirement the lock's pin does not satisfy, naming both versions
    unchecked: list[str]  # wheels whose metadata could not be read here (not in the cache, unreadable)
    checked: int  # wheels whose Requires-Dist were read and compared


def _environment(python: str, arch: Arch) -> dict[str, str]:
    """The marker environment of the stack's Python on arch (not the Python running stackbuild)."""
    env: dict[str, str] = {k: str(v) for k, v in default_environment().items()}
    env.update(
        python_version=python,
        python_full_version=f"{python}.0",
        platform_machine=arch.value,
        sys_platform="linux",
        platform_system="Linux",
        os_name="posix",
        implementation_name="cpython",
        platform_python_implementation="CPython",
    )
    return env


def _requirements(wheel: LockedWheel, cache: Cache) -> list[Requirement]:
    """Its Requires-Dist, from the METADATA of the wheel in the cache; raises ValueError when unreadable."""
    try:
        with zipfile.ZipFile(cache.blob(wheel.sha256)) as archive:
            names = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1]
            if not names:
                raise ValueError("it has no .dist-info/METADATA")
            return Metadata.from_email(archive.read(names[0]), validate=False).requires_dist or []
    except (zipfile.BadZipFile, ValueError) as err:  # InvalidMetadata is a ValueError
        raise ValueError(f"its metadata cannot be read: {str(err)[:200]}") from err


def _version(text: str) -> Version | str:
    """A PEP 440 version, or the text as it is (a specifier then matches only by ===)."""
    try:
        return Version(text)
    except InvalidVersion:
        return text


def unmet(lock: Lock, python: str, cache: Cache) -> Unmet:
    """Every Requires-Dist of a pinned wheel on a project the same component pins, checked against that pin."""
    problems, unchecked, checked = [], [], 0
    for arch, section in lock.architectures.items():
        env = _environment(python, arch)
        for component, wheels in section.python.items():
            pinned = {canonicalize_name(w.name): w for w in wheels}
            for wheel in wheels:
                if not cache.has(wheel.sha256):
                    unchecked.append(f"{arch} {wheel.file}: not in the cache here")
                    continue
                try:
                    requirements = _requirements(wheel, cache)
                except ValueError as err:
                    unchecked.append(f"{arch} {wheel.file}: {err}")
                    continue
                checked += 1
                for requirement in requirements:
                    other = pinned.get(canonicalize_name(requirement.name))
                    applies = requirement.marker is None or requirement.marker.evaluate({**env, "extra": ""})
                    if other is None or not applies:
                        continue
                    if not requirement.specifier.contains(_version(other.version), prereleases=True):
                        problems.append(
                            f"component {component} on {arch}: {wheel.name} {wheel.version} requires "
                            f"{requirement}, the lock has {other.name} {other.version}"
                        )
    return Unmet(problems, unchecked, checked)
