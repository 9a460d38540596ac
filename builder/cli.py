"""The stackbuild command line: a thin layer over the core modules."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from builder import __version__, build, compat, lock, manifest, new, plan, siteconfig, smoke
from builder import engine as engine_mod
from builder.errors import ManifestError, StackbuildError
from builder.failures import diagnose
from builder.fetch import Cache, HttpClient

EPILOG = """\
Concepts: a manifest (stacks/<name>.yaml) is what a team reviews; `lock` resolves it into
lockfiles/<name>.lock.json (git commits, tree hashes, installer sha256, base tarballs),
which is all a build reads. Exit codes: 0 ok, 1 failure, 2 invalid input.
"""


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Context:
    def __init__(self, args: argparse.Namespace) -> None:
        self.root: Path = args.root.resolve()
        self.site_path: Path | None = args.site_config

    def manifest_path(self, stack: str) -> Path:
        """A stack name (stacks/<name>.yaml) or a path to a manifest."""
        if stack.endswith((".yaml", ".yml")) or "/" in stack:
            return Path(stack)
        path = self.root / "stacks" / f"{stack}.yaml"
        if not path.is_file():
            names = sorted(p.stem for p in (self.root / "stacks").glob("*.yaml"))
            raise StackbuildError(f"no stack '{stack}' ({path} does not exist; stacks: {', '.join(names) or 'none'})")
        return path

    def load(self, stack: str) -> tuple[manifest.Manifest, Path]:
        path = self.manifest_path(stack)
        return manifest.load(path), path

    def site(self) -> siteconfig.SiteConfig:
        return siteconfig.load(self.site_path)


def cmd_validate(ctx: Context, args: argparse.Namespace) -> int:
    failed = False
    for file in args.manifests:
        try:
            loaded = manifest.load(Path(file))
        except ManifestError as err:
            print(err, file=sys.stderr)
            failed = True
            continue
        unpinned = [
            f"{kind} {arch}"
            for kind in ("toolkit", "ops", "nnal")
            for arch, pkg in (getattr(loaded.toolkit.packages, kind) or {}).items()
            if pkg.url and not pkg.sha256
        ]
        note = f" (warning: no sha256 for {', '.join(unpinned)}: the lock pins the first download)" if unpinned else ""
        print(f"ok: {file}{note}")
    return 2 if failed else 0


def cmd_schema(ctx: Context, args: argparse.Namespace) -> int:
    print(json.dumps(manifest.json_schema(), indent=2))
    return 0


def run_compat(loaded: manifest.Manifest, allow_unsupported: bool) -> compat.Report:
    report = compat.check(loaded)
    for line in report.notes:
        say(f"compat: {line}")
    for line in report.warnings:
        say(f"compat: warning: {line}")
    for line in report.errors:
        say(f"compat: {'allowed' if allow_unsupported else 'error'}: {line}")
    if report.errors and not allow_unsupported:
        raise StackbuildError(
            f"stack {loaded.name} is not a supported combination (pass --allow-unsupported to go on anyway)"
        )
    return report


def cmd_check(ctx: Context, args: argparse.Namespace) -> int:
    loaded, _ = ctx.load(args.stack)
    run_compat(loaded, args.allow_unsupported)
    print(f"compatible: {loaded.name}")
    return 0


def cmd_new(ctx: Context, args: argparse.Namespace) -> int:
    template, path = ctx.load(args.from_stack)
    name = args.name or args.version
    data = new.new_manifest(template, args.version, args.chip, name)
    out = args.output or ctx.root / "stacks" / f"{name}.yaml"
    new.write_manifest(data, out, f"{path.name} and the CANN {args.version} catalog")
    # Prove what was written loads.
    manifest.load(out)
    print(out)
    return 0


def cmd_lock(ctx: Context, args: argparse.Namespace) -> int:
    loaded, path = ctx.load(args.stack)
    target = lock.lock_path(ctx.root, loaded.name)
    cache = Cache()
    if args.check:
        site = ctx.site()
        current = lock.read(target)
        problems = lock.check(current, loaded, path.parent, site, cache, str(path))
        if problems:
            print(f"{target} is out of date:", file=sys.stderr)
            for line in problems:
                print(f"  {line}", file=sys.stderr)
            print(f"run `stackbuild lock {args.stack}` to update it", file=sys.stderr)
            return 1
        print(f"up to date: {target}")
        return 0
    run_compat(loaded, args.allow_unsupported)
    site = ctx.site()
    previous = lock.read(target) if args.update and target.exists() else None
    if args.update and args.update not in {c.id for c in loaded.components}:
        raise StackbuildError(f"--update {args.update}: no such component in {path}")
    say(f"locking {loaded.name}")
    resolved = lock.resolve(
        loaded, path.parent, site, cache, HttpClient(), say, arches=args.arch, previous=previous, update=args.update
    )
    lock.write(resolved, target)
    print(target)
    return 0


def builder_for(ctx: Context, args: argparse.Namespace) -> tuple[build.Builder, manifest.Manifest, Path]:
    loaded, path = ctx.load(args.stack)
    current = lock.read(lock.lock_path(ctx.root, loaded.name))
    builder = build.Builder(
        loaded,
        current,
        path.parent,
        ctx.site(),
        Cache(),
        ctx.root / ".stackbuild" / "logs",
        jobs=getattr(args, "jobs", 1),
        frozen=getattr(args, "frozen", False),
        say=say,
    )
    return builder, loaded, path


def cmd_render(ctx: Context, args: argparse.Namespace) -> int:
    loaded, path = ctx.load(args.stack)
    current = lock.read(lock.lock_path(ctx.root, loaded.name))
    staged = plan.make_plan(loaded, current, path.parent, args.arch)
    if args.output is None:
        for stage in staged.order():
            print(f"### {stage.name}.Dockerfile\n{stage.dockerfile}")
        return 0
    args.output.mkdir(parents=True, exist_ok=True)
    for stage in staged.order():
        (args.output / f"{stage.name}.Dockerfile").write_text(stage.dockerfile)
    print(f"{len(staged.stages)} Dockerfiles in {args.output}")
    return 0


def cmd_plan(ctx: Context, args: argparse.Namespace) -> int:
    builder, loaded, path = builder_for(ctx, args)
    staged = plan.make_plan(loaded, builder.lock, path.parent, args.arch, builder.base_shas(args.arch))
    to_build, _ = builder.stages_to_build(staged, builder.engine())
    rows = []
    for stage in staged.order():
        cached = stage.name not in to_build
        rows.append(
            {
                "stage": stage.name,
                "status": "cached" if cached else "build",
                "why": "" if cached else plan.why(builder.cache, staged, stage),
                "key": stage.key,
                "parents": stage.parents,
            }
        )
    if args.json:
        print(json.dumps({"stack": loaded.name, "arch": args.arch, "stages": rows, "drift": staged.drift}, indent=2))
        return 0
    width = max(len(r["stage"]) for r in rows)
    for row in rows:
        print(f"{row['stage']:<{width}}  {row['status']:<6}  {row['why']}".rstrip())
    for line in staged.drift:
        print(f"note: {line}")
    return 0


def cmd_build(ctx: Context, args: argparse.Namespace) -> int:
    builder, loaded, path = builder_for(ctx, args)
    started = time.monotonic()
    base_shas = builder.prepare_bases(args.arch)
    staged = plan.make_plan(loaded, builder.lock, path.parent, args.arch, base_shas)
    result = builder.run(staged)
    built = [s.name for s in result.statuses.values() if s.state == "built"]
    cached = [s.name for s in result.statuses.values() if s.state == "cached"]
    say(f"[stackbuild] {len(built)} built, {len(cached)} cached in {time.monotonic() - started:.2f}s")
    engine = builder.engine()
    for tag in result.tags.values():
        print(f"{tag}  {engine.image_id(tag)}  ({engine.size(tag) / 1e6:.0f} MB)")
    if args.no_smoke:
        return 0
    outcome = builder.smoke(staged, result)
    say(f"[stackbuild] smoke: {outcome.summary}")
    if not outcome.passed and outcome.launched:
        say(outcome.output[-2000:])
        cause = diagnose(outcome.output.splitlines())
        if cause:
            say(f"[stackbuild] likely cause: {cause}")
        return 1
    return 0


def cmd_smoke(ctx: Context, args: argparse.Namespace) -> int:
    loaded, _ = ctx.load(args.stack)
    outcome = smoke.run_smoke(engine_mod.Engine(), args.image, loaded.smoke)
    print(outcome.output.rstrip())
    say(f"[stackbuild] smoke: {outcome.summary}")
    if not outcome.passed and outcome.launched:
        cause = diagnose(outcome.output.splitlines())
        if cause:
            say(f"[stackbuild] likely cause: {cause}")
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stackbuild",
        description="Reproducible container builds of the Ascend NPU software stack.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"stackbuild {__version__}")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="project root holding stacks/ (default: .)")
    parser.add_argument("--site-config", type=Path, help="site configuration file (default: see README)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, func: Callable[[Context, argparse.Namespace], int], help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(func=func)
        return p

    p = add("validate", cmd_validate, "check manifests against the schema and the dependency graph")
    p.add_argument("manifests", nargs="+", metavar="MANIFEST")
    add("schema", cmd_schema, "print the manifest JSON Schema (for editors)")
    p = add("check", cmd_check, "check toolkit x chip x driver x OS x Python against the CANN catalog")
    p.add_argument("stack", help="stack name or manifest path")
    p.add_argument("--allow-unsupported", action="store_true", help="report known-bad combinations, don't fail")
    p = add("new", cmd_new, "write a manifest for a CANN release with the catalog's packages")
    p.add_argument("version", help="CANN version, e.g. 8.3.RC1")
    p.add_argument("--chip", required=True, help="NPU chip: 910b, 910, 310p, a3")
    p.add_argument("--from", dest="from_stack", default="8.5.0", help="stack to copy the rest from (default 8.5.0)")
    p.add_argument("--name", help="stack name (default: the version)")
    p.add_argument("-o", "--output", type=Path, help="file to write (default stacks/<name>.yaml)")
    p = add("lock", cmd_lock, "resolve a stack into lockfiles/<name>.lock.json, or check it (--check)")
    p.add_argument("stack", help="stack name or manifest path")
    p.add_argument("--check", action="store_true", help="exit 1 with a diff if the manifest or a source moved")
    p.add_argument("--update", metavar="COMPONENT", help="move only this component's git ref")
    p.add_argument("--arch", action="append", choices=manifest.ARCHITECTURES, help="base architectures to pin")
    p.add_argument("--allow-unsupported", action="store_true", help="lock a known-bad combination anyway")

    def stage_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("stack", nargs="?", default="reference", help="stack name or manifest (default reference)")
        p.add_argument("--arch", choices=manifest.ARCHITECTURES, default=lock.host_arch(), help="default: this host's")

    p = add("render", cmd_render, "write the stages' Dockerfiles (to stdout, or one file per stage in -o DIR)")
    stage_options(p)
    p.add_argument("-o", "--output", type=Path, help="directory to write <stage>.Dockerfile files into")
    p = add("plan", cmd_plan, "show each stage as cached or to build, and why")
    stage_options(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = add("build", cmd_build, "build the stack from its lock, probe each stage, smoke the result")
    stage_options(p)
    p.add_argument(
        "--jobs", "-j", type=int, default=build.default_jobs(), help="stages built at once (default %(default)s)"
    )
    p.add_argument(
        "--frozen", action="store_true", help="fail instead of building sources or a base that differ from the lock"
    )
    p.add_argument("--no-smoke", action="store_true", help="skip the smoke launch")
    p = add("smoke", cmd_smoke, "run the stack's smoke command in an image")
    p.add_argument("image", help="image reference (e.g. a tag printed by build)")
    p.add_argument("--stack", default="reference", help="stack whose smoke command to run (default reference)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(Context(args), args)
    except ManifestError as err:
        print(err, file=sys.stderr)
        return err.exit_code
    except StackbuildError as err:
        print(f"stackbuild: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        # Stage images are tagged only after their probes pass, so stopping here leaves nothing
        # that looks built; exit at once instead of waiting for builds still in flight.
        print("stackbuild: interrupted; nothing unfinished is tagged, run the command again to go on", file=sys.stderr)
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(130)
    return code


if __name__ == "__main__":
    sys.exit(main())
