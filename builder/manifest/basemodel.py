"""The bases of every manifest model and every lock model, and the chooser of a tagged union's member by
key."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Discriminator


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    # The key whose presence selects this member of its tagged union.
    TAG: ClassVar[str] = ""


class Frozen(BaseModel):
    """The base of every model of the lock (and of a source kind's locked form)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def by_key(*members: type[Model], message: str) -> Discriminator:
    """Choose a tagged union's member by which one of the members' keys the input has."""

    def pick(data: Any) -> str | None:
        if isinstance(data, dict):
            present = [m.TAG for m in members if m.TAG in data]
            return present[0] if len(present) == 1 else None
        return data.TAG if isinstance(data, members) else None

    return Discriminator(pick, custom_error_type="one_of", custom_error_message=message)


def one_of(hints: list[str]) -> str:
    """'a', 'b' or 'c': the choices a tagged union's error message names."""
    return hints[0] if len(hints) == 1 else f"{', '.join(hints[:-1])} or {hints[-1]}"
