"""Architectures: the one place their names in Docker, Debian and uname are mapped."""

from __future__ import annotations

import platform
from enum import Enum


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
        return cls({"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine))


ARCHITECTURES = tuple(a.value for a in Arch)
