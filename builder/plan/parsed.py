"""A Dockerfile's instructions as dockerfile-parse reads them (comments and blank lines left out)."""

from __future__ import annotations

import tempfile
from typing import NamedTuple

from dockerfile_parse import DockerfileParser


class Instruction(NamedTuple):
    name: str  # FROM, COPY, ENV, ...
    value: str  # its arguments, continuation lines joined
    content: str  # its text as written, continuation lines included


def instructions(dockerfile: str) -> list[Instruction]:
    with tempfile.TemporaryDirectory(prefix="stackbuild-dockerfile-") as scratch:  # the parser works on a file
        parser = DockerfileParser(path=scratch)
        parser.content = dockerfile
        return [
            Instruction(str(i["instruction"]), str(i["value"]), str(i["content"]).rstrip("\n"))
            for i in parser.structure
            if i["instruction"] != "COMMENT"
        ]
