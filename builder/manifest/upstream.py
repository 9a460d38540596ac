"""What the public upstream components need: the minimum CANN per chip and the ref that pairs with a
CANN release (shared/ascend-facts.md and each project's README; the sources are named per entry).

`new` includes a component only where its requirements hold, and `check` refuses a stack that
puts one on a CANN release or chip it does not support.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from builder.manifest.versions import version_key


@dataclass(frozen=True)
class Upstream:
    repository: str
    min_cann: dict[str, str]  # chip -> the oldest CANN release it supports there
    source: str  # where the requirement is stated
    ref: Callable[[str], str]  # CANN version -> the branch or tag that pairs with it

    def supports(self, version: str, chip: str) -> bool:
        oldest = self.min_cann.get(chip)
        return oldest is not None and version_key(version) >= version_key(oldest)


def _catlass_ref(version: str) -> str:
    # v1.6.x: CANN 8.5.0 and later; v1.5.0 the last for 8.2.RC1 (catlass README at those tags).
    return "v1.6.3" if version_key(version) >= version_key("8.5.0") else "v1.5.0"


UPSTREAM: dict[str, Upstream] = {
    # Not in `new`'s template: the CANN toolkit ships the Ascend C devkit (templates/cann.yaml says
    # where that is shown). Kept for `check`, for a stack that builds it from source over the toolkit's.
    "asc-devkit": Upstream(
        "https://github.com/hicann/asc-devkit.git",
        {"910b": "8.5.0", "a3": "8.5.0"},
        "asc-devkit README (Atlas A2/A3, open since CANN 8.5.0); tag v<CANN version> pairs with that release",
        lambda version: f"v{version}",
    ),
    "tilelang-ascend": Upstream(
        "https://github.com/tile-ai/tilelang-ascend.git",
        {"910b": "8.3.RC1", "a3": "8.3.RC1"},
        "tilelang-ascend README (CANN >= 8.3.RC1; tested on A2 and A3); default branch ascendc_pto",
        lambda version: "ascendc_pto",
    ),
    "catlass": Upstream(
        "https://github.com/hicann/catlass.git",
        {"910b": "8.2.RC1", "a3": "8.2.RC1", "950": "9.0.0"},
        "catlass README (v1.5.0: CANN >= 8.2.RC1; v1.6.x: >= 8.5.0; Atlas A2/A3, Ascend 950 from 9.0.0)",
        _catlass_ref,
    ),
}


def upstream_of(git_url: str) -> tuple[str, Upstream] | None:
    """The known upstream a component's git URL names, if any."""
    normal = git_url.removesuffix(".git").rstrip("/").lower()
    return next(
        ((name, u) for name, u in UPSTREAM.items() if u.repository.removesuffix(".git").lower() == normal), None
    )
