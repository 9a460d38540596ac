"""`stackbuild inspect TAG`, `stackbuild diff TAG_A TAG_B` and `stackbuild sbom TAG`: what images hold,
from their labels and the lock they carry, and for a published image what its registry holds beside it."""

from __future__ import annotations

import json
from typing import Any

from builder.cli.context import Context, say
from builder.cli.image_commands import DiffArgs, InspectArgs, SbomArgs
from builder.cli.screen import show
from builder.engine.protocol import EngineError
from builder.handoff.compare import compare
from builder.handoff.contents import handing_over, read_contents, summary
from builder.handoff.published import beside, provenance_lines, sbom_lines
from builder.handoff.sbom import image_sbom
from builder.model.arch import Arch
from builder.model.errors import InputError
from builder.store.files import write_atomic


def _arch(args: InspectArgs | DiffArgs | SbomArgs) -> Arch:
    return Arch(args.arch) if args.arch else Arch.host()


def cmd_inspect(ctx: Context, args: InspectArgs) -> int:
    contents = read_contents(ctx.engine(), args.image, _arch(args))
    statements: list[dict[str, Any]] = []
    sbom: dict[str, Any] | None = None
    try:  # a published image: its provenance and SBOM, attached beside it in the registry
        if (published := beside(args.image, _arch(args), ctx.settings.credentials)) is not None:
            statements, text = published.provenance(), published.sbom()
            sbom = json.loads(text) if text is not None else None
        unread = ""
    except EngineError as err:
        unread = str(err)
    if args.json:
        unreadable = {"attestations_unreadable": unread} if unread else {}
        print(json.dumps({**contents.describe(), "provenance": statements, "sbom": sbom, **unreadable}, indent=2))
    else:
        lines = summary(contents) + provenance_lines(statements) + sbom_lines(sbom)
        lines += [f"attestations  cannot be read: {unread}"] if unread else []
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
    # A published image's SBOM is the one attached beside it (the same bytes the image gives, read
    # without pulling it); made from the image when there is none.
    try:
        published = beside(args.image, _arch(args), ctx.settings.credentials)
        text = published.sbom() if published is not None else None
    except EngineError as err:  # an image named as a registry's may be here alone, or the registry down
        say(f"[stackbuild] the SBOM published beside {args.image} cannot be read ({err}): made from the image")
        text = None
    if text is None:
        text = image_sbom(ctx.engine(), args.image, _arch(args))
    if args.output is None:
        print(text)
        return 0
    try:
        write_atomic(args.output, text + "\n")
    except OSError as err:
        raise InputError(f"-o {args.output}: cannot write there: {err.strerror or err}") from err
    say(f"[stackbuild] CycloneDX 1.6 SBOM of {args.image} in {args.output}")
    return 0
