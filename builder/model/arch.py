"""Architectures: the one place their names in Docker, Debian and uname are mapped."""

from __future__ import annotations

import platform
from enum import Enum

# The machine names uname, Go and Docker give each architecture (Docker's `info` says uname's).
_MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


class Arch(str, Enum):
    X86_64 = "x86_64"
    AARCH64 = "aarch64"

    def __str__(self) -> str:
        return self.value

    @property
    def platform(self) -> str:
        """The Docker platform (`docker build --platform`)."""
        return {Arch.X86_64: "linux/amd64", Arch.AARCH64: "linux/arm64"}[self]

    @property
    def debian(self) -> str:
        """The Debian architecture (mmdebstrap --architectures)."""
        return {Arch.X86_64: "amd64", Arch.AARCH64: "arm64"}[self]

    @property
    def loader(self) -> str:
        """The dynamic loader, at the path the ABI fixes (every dynamically linked binary names it)."""
        return {Arch.X86_64: "/lib64/ld-linux-x86-64.so.2", Arch.AARCH64: "/lib/ld-linux-aarch64.so.1"}[self]

    @classmethod
    def host(cls) -> Arch:
        machine = platform.machine()
        return cls(_MACHINES.get(machine, machine))

    @classmethod
    def of_machine(cls, machine: str) -> Arch | None:
        """The architecture a machine name (uname's, Go's, Docker's) means; None for one stackbuild builds none of."""
        named = _MACHINES.get(machine.lower())
        return cls(named) if named else None


ARCHITECTURES = tuple(a.value for a in Arch)
