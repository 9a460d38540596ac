"""The base of every manifest model, and the chooser of a tagged union's member by key."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Discriminator


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    # The key whose presence selects this member of its tagged union.
    TAG: ClassVar[str] = ""


def by_key(*members: type[Model], message: str) -> Discriminator:
    """Choose a tagged union's member by which one of the members' keys the input has."""

    def pick(data: Any) -> str | None:
        if isinstance(data, dict):
            present = [m.TAG for m in members if m.TAG in data]
            return present[0] if len(present) == 1 else None
        return data.TAG if isinstance(data, members) else None

    return Discriminator(pick, custom_error_type="one_of", custom_error_message=message)
