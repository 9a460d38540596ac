"""`stackbuild vendor` and `stackbuild import`: a stack's inputs carried to a machine without outside access."""

from __future__ import annotations

from builder.cli.context import Context, say
from builder.cli.image_commands import ImportArgs, VendorArgs
from builder.execute import chain
from builder.execute.bundle import import_bundle, vendor
from builder.model.arch import Arch
from builder.model.errors import StackbuildError


def cmd_vendor(ctx: Context, args: VendorArgs) -> int:
    loaded, _ = ctx.load(args.stack)
    lock_path = ctx.lock_path(loaded.name)
    if not lock_path.exists():
        raise StackbuildError(f"{lock_path}: no lock to vendor: run `stackbuild lock {loaded.name}` first")
    arches = [Arch(a) for a in args.arch] if args.arch else list(loaded.platform.architectures)
    requests = [ctx.request(args.stack, arch, frozen=True) for arch in arches]
    plans = []
    for request in requests:
        say(f"[stackbuild] vendor: gathering {loaded.name} for {request.arch}")
        plans.append(chain.prepared(request, say)[1])
    lock, cache = requests[0].lock, requests[0].cache
    manifest = vendor(plans, lock, lock_path, ctx.site(), cache, args.output, say)
    size = sum(int(f["size"]) for f in manifest["files"].values())
    print(f"{args.output}: {len(manifest['files'])} files ({size / 1e6:.0f} MB), {len(manifest['git'])} git commits")
    return 0


def cmd_import(ctx: Context, args: ImportArgs) -> int:
    cache = ctx.cache()
    done = import_bundle(args.bundle, ctx.site(), cache, say)
    print(
        f"{args.bundle}: {done.files} files ({done.bytes / 1e6:.0f} MB) and {done.commits} git commits "
        f"in {cache.root} (lock {done.lock_sha256[:16]})"
    )
    return 0
