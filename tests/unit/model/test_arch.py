"""Machine names as uname, Go and Docker's daemons give them, normalised to stackbuild's architectures."""

from __future__ import annotations

import pytest

from builder.model.arch import Arch


@pytest.mark.parametrize(
    ("machine", "arch"),
    [
        ("x86_64", Arch.X86_64),
        ("amd64", Arch.X86_64),
        ("AMD64", Arch.X86_64),
        ("aarch64", Arch.AARCH64),
        ("arm64", Arch.AARCH64),
        ("s390x", None),
        ("", None),
    ],
)
def test_machine_names_are_normalised_to_stackbuilds_architectures(machine: str, arch: Arch | None) -> None:
    assert Arch.of_machine(machine) == arch
