"""The stackbuild command line: a thin layer over the core modules."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from builder import __version__, compat, lock, manifest, new, siteconfig
from builder.errors import ManifestError, StackbuildError
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
        print("stackbuild: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
