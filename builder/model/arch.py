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

    @classmethod
    def host(cls) -> Arch:
        machine = platform.machine()
        return cls({"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine))


ARCHITECTURES = tuple(a.value for a in Arch)
