"""The engine a build runs on and the build's options, from --jobs, --engine, --cache-from/--cache-to
and the site config: what build, publish and plan (command families, which import no other) share."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from builder.cli.context import Context, say
from builder.cli.image_commands import PublishArgs
from builder.cli.stack_commands import BuildArgs
from builder.engine import BuildEngine
from builder.execute.chain import BuildOptions
from builder.execute.stage_registry import RegistryCache
from builder.verify.host import npu_group
from builder.verify.smoke import npu_devices


def build_options(ctx: Context, args: BuildArgs | PublishArgs) -> tuple[BuildEngine, BuildOptions]:
    """The engine to build on and the build's options, from the arguments and the site config."""
    site = ctx.site()
    registry = RegistryCache.of(site, args.cache_from, args.cache_to)
    if not os.environ.get("DOCKER_TLS_VERIFY") and any(url.startswith("tcp://") for url in args.engine):
        say(
            "[stackbuild] note: tcp:// engines without DOCKER_TLS_VERIFY=1 are spoken to unencrypted "
            "(registry logins too)"
        )
    (first_name, first), *more = named_engines(ctx, args.engine)
    options = BuildOptions(
        jobs=args.jobs,
        live=sys.stderr.isatty(),
        log_dir=ctx.log_dir(),
        registry=registry,
        more_engines=tuple(more),
        engine_name=first_name,
        devices=npu_devices(ctx.settings.host_root),
        device_groups=npu_group(ctx.settings.host_root),
        compile_cache=not args.no_compile_cache,
    )
    return first, options


def named_engines(ctx: Context, urls: Sequence[str]) -> list[tuple[str, BuildEngine]]:
    """The engines --engine names (none: DOCKER_HOST's, else the local one), each with the name a build
    shows it by; the first is the one the build reports to."""
    first, more = (urls[0], urls[1:]) if urls else (None, [])
    return [(first or os.environ.get("DOCKER_HOST") or "the local engine", ctx.engine(first))] + [
        (url, ctx.engine(url)) for url in more
    ]
