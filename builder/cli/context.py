"""What every command shares: the project root, finding and loading stacks, the site config."""

from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from builder.manifest import load
from builder.manifest.model import Manifest
from builder.model.arch import Arch
from builder.model.errors import InputError
from builder.model.settings import Settings
from builder.store.cache import Cache

if TYPE_CHECKING:  # the build core is imported by the commands that use it, so `validate` starts fast
    from builder.engine import BuildEngine
    from builder.execute.chain import Request
    from builder.inputs.site import SiteConfig
    from builder.lock.resolver import Resolver


DEFAULT_STACK = "reference"


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True, kw_only=True)
class Context:
    """Global options, parsed once, and the settings resolved with them (builder.cli.configuration)."""

    root: Path
    debug: bool
    settings: Settings
    _read: dict[str, SiteConfig] = field(default_factory=dict, compare=False, repr=False)  # what site() read

    def cache(self) -> Cache:
        """The cache every command uses, where the settings say; templates compiled are kept in it."""
        from builder.plan.templating import keep_compiled_templates

        if (root := self.settings.cache_root) is None:
            raise InputError("no cache directory: there is no home directory; set STACKBUILD_CACHE or XDG_CACHE_HOME")
        keep_compiled_templates(root / "jinja")
        return Cache(root)

    def engine(self, url: str | None = None) -> BuildEngine:
        """The engine at url (None: DOCKER_HOST's, else the local one), with the settings' builder and login."""
        from builder.engine import connect

        return connect(url, self.settings.builder, self.settings.credentials)

    def stack_names(self) -> list[str]:
        return sorted(p.stem for p in (self.root / "stacks").glob("*.yaml"))

    def default_stack(self) -> str:
        """The stack a command takes when none is named: the project's only one, else reference."""
        names = self.stack_names()
        if len(names) == 1:
            return names[0]
        if DEFAULT_STACK in names:
            return DEFAULT_STACK
        if not names:
            raise InputError(
                f"no stacks/ in {self.root} or a directory above it: run stackbuild in a project, give --root, "
                "or make a stack with `stackbuild new`"
            )
        raise InputError(f"name a stack: {self.root / 'stacks'} holds {', '.join(names)} and no {DEFAULT_STACK}")

    def manifest_path(self, stack: str) -> Path:
        """A stack name (stacks/<name>.yaml) or a path to a manifest."""
        if stack.endswith((".yaml", ".yml")) or "/" in stack:
            return Path(stack)
        path = self.root / "stacks" / f"{stack}.yaml"
        if not path.is_file():
            names = self.stack_names()
            close = difflib.get_close_matches(stack, names, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise InputError(f"no stack {stack!r} ({path} does not exist; {hint}stacks: {', '.join(names) or 'none'})")
        return path

    def load(self, stack: str) -> tuple[Manifest, Path]:
        path = self.manifest_path(stack)
        return load(path), path

    def site(self) -> SiteConfig:
        """The site configuration, read once per command (every step of it then sees the same)."""
        if "site" not in self._read:
            from builder.inputs.site import load as load_site

            self._read["site"] = load_site(self.settings.site_config)
        return self._read["site"]

    def resolver(self, manifest_path: Path) -> Resolver:
        """What locking the manifest at manifest_path needs: the site, the cache, an HTTP client."""
        from builder.lock.resolver import Resolver
        from builder.store.http import HttpClient

        site = self.site()
        return Resolver(manifest_path.parent, site, self.cache(), HttpClient(headers=site.headers), say)

    def lock_path(self, stack: str) -> Path:
        """lockfiles/<stack>.lock.json under the project root (the one place that says so)."""
        return self.root / "lockfiles" / f"{stack}.lock.json"

    def log_dir(self) -> Path:
        return self.root / ".stackbuild" / "logs"

    def error_log_dir(self) -> Path:
        """Where a traceback goes: the project's logs, or the cache's outside a project (never the
        current directory because stackbuild ran there)."""
        return self.log_dir() if is_project(self.root) else self.cache().root / "logs"

    def request(self, stack: str, arch: Arch, frozen: bool = False) -> Request:
        from builder import lock as lock_io
        from builder.execute.chain import Request

        manifest, path = self.load(stack)
        locked = lock_io.read(self.lock_path(manifest.name))
        return Request(manifest, path, locked, self.site(), self.cache(), arch, frozen, self.settings.image_prefix)


def is_project(top: Path) -> bool:
    """A project: a directory whose stacks/ holds a manifest."""
    return any((top / "stacks").glob("*.yaml"))


def project_root(start: Path) -> Path:
    """The nearest of start and its parents that is a project, as git finds .git; start when none is."""
    return next((top for top in (start, *start.parents) if is_project(top)), start)
