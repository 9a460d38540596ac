"""`stackbuild inspect TAG` and `stackbuild diff TAG_A TAG_B`: what images hold, from their labels and
the lock they carry."""

from __future__ import annotations

import json

from builder.cli.context import Context, say
from builder.cli.image_commands import DiffArgs, InspectArgs, SbomArgs
from builder.cli.screen import show
from builder.engine.protocol import EngineError
from builder.handoff.compare import compare
from builder.handoff.contents import handing_over, read_contents, summary
from builder.handoff.published_provenance import provenance_lines, published_provenance
from builder.handoff.sbom import debian_packages, make_sbom, os_id, python_packages
from builder.model.arch import Arch
from builder.model.errors import InputError
from builder.store.files import write_atomic


def _arch(args: InspectArgs | DiffArgs | SbomArgs) -> Arch:
    return Arch(args.arch) if args.arch else Arch.host()


def cmd_inspect(ctx: Context, args: InspectArgs) -> int:
    contents = read_contents(ctx.engine(), args.image, _arch(args))
    try:  # a published image: its provenance, attached beside it in the registry
        statements, unread = published_provenance(args.image, ctx.settings.credentials), ""
    except EngineError as err:
        statements, unread = [], str(err)
    if args.json:
        unreadable = {"provenance_unreadable": unread} if unread else {}
        print(json.dumps({**contents.describe(), "provenance": statements, **unreadable}, indent=2))
    else:
        lines = summary(contents) + provenance_lines(statements)
        lines += [f"provenance    cannot be read: {unread}"] if unread else []
        show(lines + handing_over(contents))  # last: what whoever was given the tag does next
    return 0


def cmd_diff(ctx: Context, args: DiffArgs) -> int:
    engine = ctx.engine()
    changes = compare(read_contents(engine, args.first, _arch(args)), read_contents(engine, args.second, _arch(args)))
    if args.json:
        print(json.dumps([c.as_json() for c in changes], indent=2))
    elif changes:
        print("\n".join(c.line() for c in changes))
    else:
        print(f"{args.first} and {args.second} hold the same stack (same lock content for this architecture)")
    return 1 if changes and args.exit_code else 0


def cmd_sbom(ctx: Context, args: SbomArgs) -> int:
    engine = ctx.engine()
    contents = read_contents(engine, args.image, _arch(args))
    image_id = engine.image_id(args.image) or ""
    text = make_sbom(
        contents,
        image_id,
        debian_packages(engine, args.image),
        python_packages(engine, args.image),
        os_id(engine, args.image),
    )
    if args.output is None:
        print(text)
        return 0
    try:
        write_atomic(args.output, text + "\n")
    except OSError as err:
        raise InputError(f"-o {args.output}: cannot write there: {err.strerror or err}") from err
    say(f"[stackbuild] CycloneDX 1.6 SBOM of {args.image} in {args.output}")
    return 0
