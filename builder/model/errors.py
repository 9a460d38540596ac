"""Errors a user acts on: each names the file, the line, the field and the fix.

Deep code raises these; the CLI is the one place that turns them into a line on stderr and
an exit code (InputError: 2, bad input; Unreached: 3, a source out of reach; StackbuildError: 1,
a failure).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# C0 and C1 controls and the Unicode line separators: anything str.splitlines breaks at.
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class StackbuildError(Exception):
    """An expected failure: the CLI prints it as is (no traceback) and exits non-zero."""

    exit_code = 1

    def __reduce__(self) -> tuple[object, ...]:
        # Raised in a spawned process (verify-reproducible's second build), it comes back whole: pickle's
        # default calls the class with the message, which subclasses taking keyword arguments refuse.
        return (_remade, (type(self), str(self)), self.__dict__)


def _remade(kind: type[StackbuildError], message: str) -> StackbuildError:
    error = kind.__new__(kind)
    Exception.__init__(error, message)
    return error


class LoggedFailure(StackbuildError):
    """A failure whose message already names the log that holds its details (a stage's build log)."""


class Unreached(StackbuildError):
    """What a command needs was not reached: a source gave no answer, or the lock records a part as
    unresolved because none did when it was made: exit code 3 (try again, or point it at a mirror)."""

    exit_code = 3


class SourceError(StackbuildError):
    """A component's source (of any kind) could not be pinned or read: a ref gone, a tree refused."""


class SourceUnreachable(SourceError):
    """The source could not be listed at all (no answer, no such repository): an outage or a wrong
    URL, not a moved ref. A relock keeps the lock's pin; `lock --check` reports it apart."""


class SourceNoAnswer(SourceUnreachable):
    """The source's host gave no answer at all (no name, no connection, a server error): an outage or
    a host this machine does not reach, never a wrong URL. With no pin to keep, `lock` exits 3."""


class InputError(StackbuildError):
    """Bad input (a manifest, lock, site config or option): exit code 2."""

    exit_code = 2


@dataclass(frozen=True)
class LocatedProblem:
    file: str
    line: int
    col: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.col}" if self.line else self.file
        text = f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        return one_line(text)


def one_line(text: str) -> str:
    """Control characters shown as escapes: one problem is always one line."""
    return CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode(), text)


class ManifestError(InputError):
    def __init__(self, problems: list[LocatedProblem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))
