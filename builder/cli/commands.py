"""The command table: every subcommand's name, the task `stackbuild --help` lists it under with
one line, the example its --help ends with, whether it holds the cache's lock, and how its parser
is made (`command`); the options of each family are declared in stack_commands and image_commands.

The implementations (builder.cli.stacks, .locking, .building) are imported only when their
command runs, so `stackbuild validate` does not pay for the Docker client and the build core.
"""

from __future__ import annotations

import argparse
from typing import TypeAlias

from builder.cli import dispatch

SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


# Commands that read or write the cache's entries (inputs, records, git mirrors): they hold its
# shared lock while they run, so `gc` (which must hold it alone) never removes what one is using.
CACHE_COMMANDS = frozenset(
    {"lock", "render", "plan", "build", "verify-reproducible", "smoke", "publish", "vendor", "import", "shell"}
)


# `stackbuild --help` lists the commands by task, each with a line that fits a terminal; a
# command's own --help says all.
TASKS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (
        "author a stack",
        (
            ("new", "write a manifest for a CANN release from the catalog"),
            ("validate", "check manifests against the schema and the dependency graph"),
            ("schema", "print the manifest JSON Schema (for editors)"),
            ("check", "check toolkit, chip, driver, OS and Python against the CANN catalog"),
            ("lock", "pin a stack into lockfiles/<name>.lock.json, or --check it"),
        ),
    ),
    (
        "build",
        (
            ("plan", "show each stage as cached or to build, and why"),
            ("render", "write the stages' Dockerfiles"),
            ("build", "build the stack from its lock, probe each stage, smoke the result"),
            ("smoke", "run the smoke command an image carries (no checkout needed)"),
            ("shell", "a shell in a stage's image, or just before its failed step"),
            ("verify-reproducible", "build twice from nothing and compare every stage"),
        ),
    ),
    (
        "share",
        (
            ("publish", "build every architecture and push one image index per tag"),
            ("vendor", "write everything a build needs into one directory, for an offline machine"),
            ("import", "fill the cache from a vendor directory, every file checked"),
        ),
    ),
    (
        "hand over",
        (
            ("run", "start an image with this host's NPUs and driver mounted"),
            ("inspect", "what a final image holds, and where it came from"),
            ("diff", "what differs between two final images"),
            ("sbom", "a CycloneDX SBOM of a final image"),
            ("doctor", "check this host for a stack, with a remedy per failure"),
        ),
    ),
    ("tidy", (("gc", "remove the stage images no recent build used"),)),
)


def task_listing() -> str:
    """The commands by task, for `stackbuild --help`."""
    width = max(len(name) for _, commands in TASKS for name, _ in commands)
    blocks = [
        f"{task}:\n" + "\n".join(f"  {name:<{width}}  {summary}" for name, summary in commands)
        for task, commands in TASKS
    ]
    return "\n\n".join(blocks)


# One line a person can copy from each command's --help (a test holds every command to having one).
EXAMPLES = {
    "validate": "stackbuild validate stacks/*.yaml",
    "schema": "stackbuild schema > stackbuild.schema.json",
    "check": "stackbuild check 8.5.0",
    "new": "stackbuild new 8.5.0 --chip 910b",
    "lock": "stackbuild lock 8.5.0 --arch x86_64 --arch aarch64",
    "render": "stackbuild render reference -o /tmp/dockerfiles",
    "plan": "stackbuild plan reference --json",
    "build": "stackbuild build reference --jobs 2",
    "verify-reproducible": "stackbuild verify-reproducible reference --at HEAD~1",
    "smoke": "stackbuild smoke registry.example.com/team/reference:lock-1a2b3c4d5e6f",
    "publish": "stackbuild publish 8.5.0 --registry registry.example.com/team --alias latest",
    "vendor": "stackbuild vendor 8.5.0 -o /media/usb/8.5.0-bundle",
    "import": "stackbuild import /media/usb/8.5.0-bundle",
    "run": "stackbuild run registry.example.com/team/8.5.0:lock-1a2b3c4d5e6f -- npu-smi info",
    "shell": "stackbuild shell reference runtime",
    "inspect": "stackbuild inspect registry.example.com/team/8.5.0:lock-1a2b3c4d5e6f",
    "diff": "stackbuild diff team/8.5.0:lock-1a2b3c4d5e6f team/8.5.0:lock-6f5e4d3c2b1a",
    "sbom": "stackbuild sbom stackbuild/reference:8.5.0-910b-debian12-py3.11-x86_64 -o sbom.json",
    "doctor": "stackbuild doctor 8.5.0",
    "gc": "stackbuild gc --dry-run",
}


class HelpFormatter(argparse.HelpFormatter):
    """argparse's, but the example stays one line, to copy as it is."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return indent + text if text.startswith("example: ") else super()._fill_text(text, width, indent)


def command(sub: SubParsers, name: str, target: dispatch.Handler, text: str) -> argparse.ArgumentParser:
    """A subcommand whose --help starts with what it does and ends with an example, run by target."""
    parser = sub.add_parser(
        name, help=text, description=text, epilog=f"example: {EXAMPLES[name]}", formatter_class=HelpFormatter
    )
    parser.set_defaults(target=target, uses_cache=name in CACHE_COMMANDS)
    return parser
