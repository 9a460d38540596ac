"""`stackbuild publish`: build every architecture from the lock (frozen), smoke each, then push."""

from __future__ import annotations

import datetime

from builder.cli.building import build_arch, run_smoke_of
from builder.cli.context import Context, say
from builder.cli.options import PublishArgs
from builder.engine.registry_api import RegistryClient
from builder.execute import chain
from builder.execute.publish import BuildRecord, immutable_tag, publish
from builder.inputs.project import origin_of
from builder.model.arch import Arch
from builder.model.errors import StackbuildError
from builder.plan.labels import release_name


def cmd_publish(ctx: Context, args: PublishArgs) -> int:
    loaded, _ = ctx.load(args.stack)
    arches = [Arch(a) for a in args.arch] if args.arch else list(loaded.platform.architectures)
    if unlisted := [a.value for a in arches if a not in loaded.platform.architectures]:
        raise StackbuildError(f"{args.stack} does not list {', '.join(unlisted)} in platform.architectures")
    locked = ctx.request(args.stack, arches[0], frozen=True).lock
    for arch in arches:  # every architecture's lock complete before any is built
        chain.refuse_unresolved(locked, arch)
    # The registry is asked first: a refused login or an unreachable registry fails now, not after the builds.
    client = RegistryClient(args.registry.split("/", 1)[0])
    client.manifest(f"{args.registry.partition('/')[2]}/{locked.stack.lower()}", immutable_tag(locked))
    results: dict[Arch, chain.Built] = {}
    started = datetime.datetime.now(datetime.timezone.utc)
    for arch in arches:
        say(f"[stackbuild] publish: building {loaded.name} for {arch} from its lock (frozen)")
        results[arch] = build_arch(ctx, args, arch, frozen=True)
        if run_smoke_of(results[arch]) != 0:  # only what passed its smoke is pushed
            raise StackbuildError(f"the smoke of {loaded.name} failed on {arch}: nothing was pushed")
    last = results[arches[-1]]
    images = {arch: result.tagged.tags for arch, result in results.items()}
    say(f"[stackbuild] publish: pushing to {args.registry}")
    built = BuildRecord(origin_of(last.request.manifest_dir), started)
    pushed = publish(
        images, last.request.lock, release_name(loaded), args.registry, args.alias, last.engine, client, built
    )
    for item in pushed:
        print(f"{item.ref}  {item.digest}  ({item.what})")
    return 0
