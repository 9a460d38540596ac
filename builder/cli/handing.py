"""`stackbuild inspect TAG` and `stackbuild diff TAG_A TAG_B`: what images hold, from their labels and
the lock they carry."""

from __future__ import annotations

import argparse
import json

from builder.cli.common import Context
from builder.engine.docker_engine import DockerEngine
from builder.handoff.compare import compare
from builder.handoff.contents import read_contents, summary
from builder.model.arch import Arch


def _arch(args: argparse.Namespace) -> Arch:
    return Arch(args.arch) if args.arch else Arch.host()


def cmd_inspect(ctx: Context, args: argparse.Namespace) -> int:
    contents = read_contents(DockerEngine(), args.image, _arch(args))
    if args.json:
        print(json.dumps(contents.describe(), indent=2))
    else:
        print("\n".join(summary(contents)))
    return 0


def cmd_diff(ctx: Context, args: argparse.Namespace) -> int:
    engine = DockerEngine()
    changes = compare(read_contents(engine, args.first, _arch(args)), read_contents(engine, args.second, _arch(args)))
    if args.json:
        print(json.dumps([c.as_json() for c in changes], indent=2))
    elif changes:
        print("\n".join(c.line() for c in changes))
    else:
        print(f"{args.first} and {args.second} hold the same stack (same lock content for this architecture)")
    return 1 if changes and args.exit_code else 0
