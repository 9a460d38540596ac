"""One retry policy for everything that talks over a network: the engine's registry transfers, the
registry client and HTTP downloads. A value each client is given, so a caller (a test, a site) can
say how patient to be without patching anything."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import tenacity


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4
    backoff: float = 0.5  # seconds before the second attempt, doubled each time after
    longest: float = 8.0  # no wait longer than this

    def retrying(self, transient: Callable[[BaseException], bool]) -> tenacity.Retrying:
        """A tenacity Retrying that tries again on what transient says is passing, then reraises."""
        return tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.attempts),
            wait=tenacity.wait_exponential(multiplier=self.backoff, max=self.longest),
            retry=tenacity.retry_if_exception(transient),
            reraise=True,
        )
