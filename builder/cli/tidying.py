"""`stackbuild gc [--dry-run] [--keep N] [--inputs]`: the stage images no recent build used, removed."""

from __future__ import annotations

from builder.cli.context import Context, say
from builder.cli.image_commands import GcArgs
from builder.engine import BuildEngine
from builder.handoff.gc import Garbage, collect, find_garbage, lying_blobs, no_build_running
from builder.store.cache import Cache


def _mb(size: int) -> str:
    return f"{size / 1e6:.0f} MB"


def cmd_gc(ctx: Context, args: GcArgs) -> int:
    engine, cache = ctx.engine(), ctx.cache()
    with no_build_running(cache):
        return _collect(engine, cache, args, ctx.settings.image_prefix)


def _compile_caches(garbage: Garbage, verb: str) -> None:
    """The compile caches gc removes, or how much it keeps of them."""
    if garbage.removes_compile_caches:
        for component, mount_id, size in garbage.compile_caches:
            print(f"{verb} the compile cache of {component} {mount_id[:12]}  ({_mb(size)})")
    elif garbage.compile_caches:
        kept = sum(size for _, _, size in garbage.compile_caches)
        say(f"[stackbuild] compile caches kept ({_mb(kept)}): --compile-caches removes them")


def _collect(engine: BuildEngine, cache: Cache, args: GcArgs, image_prefix: str) -> int:
    if args.verify:
        checked, bad = len(cache.blob_files()), lying_blobs(cache)
        for path in bad:
            print(f"{'would remove' if args.dry_run else 'removing'} {path}: its content does not hash to its name")
            if not args.dry_run:
                path.unlink(missing_ok=True)
        say(f"[stackbuild] verified {checked} cached files: {len(bad)} do not hash to their names")
    garbage = find_garbage(
        engine,
        cache,
        args.keep,
        args.inputs,
        args.include_recent,
        image_prefix=image_prefix,
        each_compile_cache=args.compile_caches,
    )
    stacks = sorted({f"{run.stack} ({run.arch})" for run in garbage.kept})
    say(f"[stackbuild] keeping the images of the last {args.keep} build(s) of: {', '.join(stacks) or 'no stack'}")
    verb = "would remove" if args.dry_run else "removing"
    for tag, size in garbage.images:
        print(f"{verb} {tag}  ({_mb(size)})")
    for path, size in (*garbage.inputs, *garbage.scratch):
        print(f"{verb} {path}  ({_mb(size)})")
    if garbage.recent:
        say(
            f"[stackbuild] kept {len(garbage.recent)} images tagged in the last 24 h after this cache's builds of them "
            "began (a build using another cache on this engine?): --include-recent removes them too"
        )
    _compile_caches(garbage, verb)
    if not args.inputs:
        say("[stackbuild] cached inputs (installers, .debs, wheels, git mirrors) kept: --inputs removes unused ones")
    if args.dry_run:
        total = garbage.image_bytes + garbage.input_bytes
        say(f"[stackbuild] dry run: {len(garbage.images)} images, {len(garbage.inputs)} inputs, up to {_mb(total)}")
        return 0
    freed = collect(engine, cache, garbage)
    say(f"[stackbuild] removed {len(garbage.images)} images and {len(garbage.inputs)} inputs: freed {_mb(freed)}")
    return 0
