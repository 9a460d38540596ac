"""What every command shares: the project root, finding and loading stacks, the site config."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from builder import lock as lock_io
from builder.inputs import site as site_config
from builder.manifest import load
from builder.manifest.model import Manifest
from builder.model.arch import Arch
from builder.model.errors import StackbuildError
from builder.plan.resolve import Request
from builder.store.cache import Cache

Command = Callable[["Context", argparse.Namespace], int]
SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def command(sub: SubParsers, name: str, func: Command, text: str) -> argparse.ArgumentParser:
    """A subcommand whose --help starts with what it does."""
    parser = sub.add_parser(name, help=text, description=text)
    parser.set_defaults(func=func)
    return parser


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True, kw_only=True)
class Context:
    """Global options, parsed once."""

    root: Path
    site_path: Path | None
    debug: bool

    def manifest_path(self, stack: str) -> Path:
        """A stack name (stacks/<name>.yaml) or a path to a manifest."""
        if stack.endswith((".yaml", ".yml")) or "/" in stack:
            return Path(stack)
        path = self.root / "stacks" / f"{stack}.yaml"
        if not path.is_file():
            names = sorted(p.stem for p in (self.root / "stacks").glob("*.yaml"))
            raise StackbuildError(f"no stack '{stack}' ({path} does not exist; stacks: {', '.join(names) or 'none'})")
        return path

    def load(self, stack: str) -> tuple[Manifest, Path]:
        path = self.manifest_path(stack)
        return load(path), path

    def site(self) -> site_config.SiteConfig:
        return site_config.load(self.site_path)

    def lock_path(self, stack: str) -> Path:
        return lock_io.lock_path(self.root, stack)

    def log_dir(self) -> Path:
        return self.root / ".stackbuild" / "logs"

    def request(self, stack: str, arch: Arch, frozen: bool = False) -> Request:
        manifest, path = self.load(stack)
        locked = lock_io.read(self.lock_path(manifest.name))
        return Request(manifest, path, locked, self.site(), Cache(), arch, frozen)
