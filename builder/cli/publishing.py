"""`stackbuild publish`: every architecture built from the lock (frozen) and smoked, then pushed, by the
chain (builder.execute.chain.destination, .published); this says which architectures and shows the result."""

from __future__ import annotations

from builder.cli.context import Context, say
from builder.cli.engines import build_options
from builder.cli.image_commands import PublishArgs
from builder.cli.screen import final_lines, show
from builder.execute import chain
from builder.handoff.sbom import image_sbom
from builder.model.arch import Arch
from builder.model.errors import StackbuildError


def cmd_publish(ctx: Context, args: PublishArgs) -> int:
    loaded, _ = ctx.load(args.stack)
    arches = [Arch(a) for a in args.arch] if args.arch else list(loaded.platform.architectures)
    if unlisted := [a.value for a in arches if a not in loaded.platform.architectures]:
        raise StackbuildError(f"{args.stack} does not list {', '.join(unlisted)} in platform.architectures")
    to = chain.destination(
        [ctx.request(args.stack, arch) for arch in arches], args.registry, args.alias, ctx.settings.credentials
    )
    engine, options = build_options(ctx, args)
    published = chain.published(to, engine, options, ctx.root / ".stackbuild" / "provenance", say, image_sbom)
    for built in published.built.values():
        show(final_lines(engine, built))
    for item in published.pushed:
        print(f"{item.ref}  {item.digest}  ({item.what})")
    return 0
