"""`stackbuild lock`: write (keeping every pin its source still serves), check (--check) or move pins (--update)."""

from __future__ import annotations

import sys

from builder import lock as lock_io
from builder.cli.context import Context
from builder.cli.readiness import run_compat
from builder.cli.stack_commands import LockArgs
from builder.lock.check import check, mirror_drift
from builder.lock.make_lock import how_to_complete, make_lock
from builder.lock.relock import UPDATE_ALL
from builder.model.arch import Arch
from builder.model.errors import InputError, Unreached


def cmd_lock(ctx: Context, options: LockArgs) -> int:
    loaded, path = ctx.load(options.stack)
    target = ctx.lock_path(loaded.name)
    resolver = ctx.resolver(path)
    if options.check:
        current = lock_io.read(target)
        checked = check(current, loaded, resolver, str(path), options.stack)
        for note in [*checked.behind, *mirror_drift(current, resolver)]:
            print(f"note: {note}", file=sys.stderr)
        for part in current.unresolved:
            print(f"skipped: {part.what()} (unresolved in the lock: {part.reason})", file=sys.stderr)
        for line in checked.unreachable:
            print(f"unreachable: {line}", file=sys.stderr)
        if checked.drift:
            print(f"{target} is out of date:", file=sys.stderr)
            for line in checked.drift:
                print(f"  {line}", file=sys.stderr)
            print(f"run `stackbuild lock {options.stack}` to update it", file=sys.stderr)
            return 1
        if checked.unreachable:
            print(f"cannot check {target}: a source did not answer (not drift: try again later)", file=sys.stderr)
            return Unreached.exit_code
        print(f"up to date: {target}")
        return 0
    run_compat(loaded, options.allow_unsupported)
    if options.update not in (None, UPDATE_ALL, *(c.id for c in loaded.components)):
        known = ", ".join(c.id for c in loaded.components)
        raise InputError(f"--update {options.update}: no such component in {path} (components: {known})")
    resolved = make_lock(loaded, resolver, [Arch(a) for a in options.arch or ()], target, options.update)
    print(target)
    if block := how_to_complete(resolved, target, options.stack, resolver.site.where):
        print("\n".join(block), file=sys.stderr)
        return Unreached.exit_code
    return 0
