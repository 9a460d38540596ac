"""A failed stage's last state, for `stackbuild shell`: the failure is recorded when it happens; the
shell later builds the stage's Dockerfile up to the step that failed (every earlier step comes from
the builder's cache) and opens there, so the failing command can be run again by hand."""

from __future__ import annotations

import json
import re
import shlex
import tempfile
from dataclasses import dataclass
from typing import Any

from dockerfile_parse import DockerfileParser

from builder.plan.plan_model import Plan, Stage
from builder.store.cache import Cache

FAILURE_KIND = "failures"
# Both builders' failures are said this way (builder.engine.buildkit.failure words BuildKit's like it).
FAILED_COMMAND = re.compile(r"The command '(.*)' returned a non-zero code: \d+", re.S)


@dataclass(frozen=True)
class Failure:
    command: str | None  # the RUN that failed, as the builder ran it; None: the probes failed
    reason: str


def failed_command(reason: str) -> str | None:
    """The RUN command a build failure names (None: it failed otherwise, e.g. a COPY or the engine)."""
    found = FAILED_COMMAND.search(reason)
    return found.group(1) if found else None


def record_failure(cache: Cache, plan: Plan, stage: Stage, reason: str, command: str | None) -> None:
    """A failed RUN (command) or failed probes (None): what `shell` needs to open the stage's state."""
    record = {"key": stage.key, "command": command, "reason": reason}
    cache.records.write(record, FAILURE_KIND, plan.stack.lower(), plan.arch.value, stage.name)


def last_failure(cache: Cache, plan: Plan, stage: Stage) -> Failure | None:
    """The stage's last failure here, if it failed with the inputs it has now."""
    record = cache.records.read(FAILURE_KIND, plan.stack.lower(), plan.arch.value, stage.name)
    if record is None or record.get("key") != stage.key:
        return None
    command = record.get("command")
    return Failure(command if isinstance(command, str) else None, str(record.get("reason", "")))


def _words(text: str) -> list[str]:
    return text.split()


def _ran(instruction: dict[str, Any], shell: list[str]) -> list[str]:
    """What a RUN ran: its exec form as is, its shell form through the SHELL in force."""
    value = str(instruction["value"])
    if value.lstrip().startswith("["):
        try:
            return [str(word) for word in json.loads(value)]
        except ValueError:
            pass
    return [*shell, value]


def cut_before(dockerfile: str, command: str) -> str | None:
    """The Dockerfile up to the last RUN that ran command (not included); None when no RUN did."""
    with tempfile.TemporaryDirectory() as scratch:
        parser = DockerfileParser(path=scratch)
        parser.content = dockerfile
        structure = parser.structure
    shell, cut = ["/bin/sh", "-c"], None
    for instruction in structure:
        if instruction["instruction"] == "FROM":
            shell = ["/bin/sh", "-c"]
        elif instruction["instruction"] == "SHELL":
            shell = [str(word) for word in json.loads(instruction["value"])]
        elif instruction["instruction"] == "RUN" and _words(" ".join(_ran(instruction, shell))) == _words(command):
            cut = int(instruction["startline"])
    if cut is None:
        return None
    return "".join(dockerfile.splitlines(keepends=True)[:cut])


def rerun_line(command: str) -> str:
    """The failed command as one shell line (BuildKit shows `/bin/sh -c X` as a plain join)."""
    words = command.split(" ")
    if "-c" not in words[:4]:
        return command
    at = words.index("-c")
    return f"{' '.join(words[: at + 1])} {shlex.quote(' '.join(words[at + 1 :]))}"
