"""What stands between a stack and its lock or build, said the same by every command that asks: the
combination checked against the CANN catalog (check, lock, build) and what the site must add before a
first lock (build). Command families import no other family: what two of them need is here."""

from __future__ import annotations

from builder.cli.context import Context, say
from builder.inputs.source_kinds import kind_of
from builder.manifest import compat
from builder.manifest.model import Manifest
from builder.model.errors import InputError


def run_compat(loaded: Manifest, allow_unsupported: bool) -> compat.Report:
    report = compat.check(loaded)
    for line in report.errors:  # the fatal first
        say(f"compat: {'allowed' if allow_unsupported else 'error'}: {line}")
    for line in report.warnings:
        say(f"compat: warning: {line}")
    for line in report.notes:
        say(f"compat: {line}")
    if report.errors and not allow_unsupported:
        raise _unsupported(loaded)
    return report


def _unsupported(loaded: Manifest) -> InputError:
    return InputError(f"stack {loaded.name} is not a supported combination (pass --allow-unsupported to go on anyway)")


def refuse_unsupported(loaded: Manifest, allow_unsupported: bool) -> None:
    """A known-bad combination stops a command before it does anything else (host setup, locking,
    downloads): its reasons first, each with the supported alternative the catalog has."""
    if allow_unsupported or not (errors := compat.check(loaded).errors):
        return
    for line in errors:
        say(f"compat: error: {line}")
    raise _unsupported(loaded)


def steps_needed(ctx: Context, loaded: Manifest) -> list[str]:
    """Everything that stands between a supported stack without a lock and its build, all at once."""
    site = ctx.site()
    steps = [
        f"add repos.{name} (component {comp.id}'s repository) to the site configuration ({site.where})"
        for comp in loaded.components
        if (origin := kind_of(comp.source).origin(comp.source))
        and origin.startswith("site:")
        and (name := origin.removeprefix("site:")) not in site.repos
    ]
    return steps
