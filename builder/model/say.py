"""How deep code reports progress: a function taking one line (the CLI decides where it goes)."""

from __future__ import annotations

from collections.abc import Callable

Say = Callable[[str], None]
