"""Commands about manifests: validate, schema, check, new."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from builder.cli.context import Context, say
from builder.cli.readiness import run_compat
from builder.cli.stack_commands import CheckArgs, NewArgs, SchemaArgs, ValidateArgs
from builder.inputs import package_kinds
from builder.manifest import load, new
from builder.manifest.loading import json_schema
from builder.manifest.toolkit import PACKAGE_ROLES
from builder.manifest.types import NAME_PATTERN
from builder.model.errors import InputError, ManifestError, StackbuildError


def cmd_validate(ctx: Context, args: ValidateArgs) -> int:
    failed = False
    for file in args.manifests:
        try:
            loaded = load(Path(file))
        except ManifestError as err:
            print(err, file=sys.stderr)
            failed = True
            continue
        unpinned = [
            f"{role} {arch}"
            for role in PACKAGE_ROLES
            for arch, pkg in loaded.toolkit.packages.of(role).items()
            if package_kinds.kind_of(pkg).unpinned(pkg)
        ]
        note = f" (warning: no sha256 for {', '.join(unpinned)}: the lock pins the first download)" if unpinned else ""
        print(f"ok: {file}{note}")
    return 2 if failed else 0


def cmd_schema(ctx: Context, args: SchemaArgs) -> int:
    print(json.dumps(json_schema(), indent=2))
    return 0


def cmd_check(ctx: Context, args: CheckArgs) -> int:
    loaded, _ = ctx.load(args.stack)
    report = run_compat(loaded, args.allow_unsupported)
    for line in report.checked:
        print(f"checked  {line}")
    target = ctx.lock_path(loaded.name)
    if target.exists():
        # Imported here: the lock's model pulls in the network and engine layers, which `validate`
        # (run once per manifest, by editors and CI) never needs; it starts a third faster.
        from builder import lock as lock_io
        from builder.lock import requires

        locked = lock_io.read(target)
        found = requires.unmet(locked, loaded.platform.python, ctx.cache())
        if found.checked:
            print(f"checked  {found.checked} locked wheels' Requires-Dist against their components' other wheels")
        for part in locked.unresolved:
            if part.kind == "python":
                say(f"check: note: Requires-Dist not checked for the {part.what()}: unresolved in {target.name}")
        if found.unchecked:
            more = f" (and {len(found.unchecked) - 3} more)" if len(found.unchecked) > 3 else ""
            say(f"check: note: Requires-Dist not checked for {'; '.join(found.unchecked[:3])}{more}")
        for line in found.problems:
            say(f"check: error: {line} ({target})")
        if found.problems:
            raise StackbuildError(
                f"the lock of {loaded.name} pins wheels that do not meet each other's requirements: "
                f"fix the pins in python_packages and run `stackbuild lock {loaded.name}`"
            )
    print(f"compatible: {loaded.name}")
    return 0


def cmd_new(ctx: Context, args: NewArgs) -> int:
    name = args.name or f"{args.version}-{args.chip}"
    if not re.fullmatch(NAME_PATTERN, name):
        raise InputError(f"--name {name[:80]!r}: a stack name uses letters, digits, '.', '_' and '-'")
    if args.from_stack:
        loaded, path = ctx.load(args.from_stack)
        template, origin = loaded.model_dump(mode="json", by_alias=True, exclude_none=True), path.name
    else:
        template, origin = new.packaged_template(args.version), "stackbuild's template"
    data = new.new_manifest(template, args.version, args.chip, name)
    if args.user is not None:
        data["user"] = new.user_entry(args.user)
    out = args.output or ctx.root / "stacks" / f"{name}.yaml"
    new.write_manifest(data, out, f"{origin} and the CANN {args.version} catalog")
    try:
        load(out)  # prove what was written loads; never leave a manifest that does not
    except ManifestError:
        out.unlink()
        raise
    print(out)
    shown = name if out.resolve() == (ctx.root / "stacks" / f"{name}.yaml").resolve() else str(out)
    say(f"[stackbuild] next: stackbuild check {shown}  # the combination against the CANN catalog")
    say(f"[stackbuild]       stackbuild lock {shown}   # every source and package pinned")
    say(f"[stackbuild]       stackbuild build {shown}  # built, probed and smoked")
    return 0
