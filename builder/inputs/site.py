"""Site configuration: mirrors, local installer directories, the cache registry, team repos.

Found in this order (the first that exists wins): $STACKBUILD_SITE_CONFIG,
./stackbuild.site.yaml, $XDG_CONFIG_HOME/stackbuild/site.yaml (~/.config/...).

    url_rewrites:             # like git's insteadOf, for internal mirrors
      - {from: "https://github.com/", to: "https://git.mirror.internal/github/"}
    installer_dirs: [/srv/cann]   # looked in (by file name + sha256) before any download
    cache_registry: registry.internal:5000/stackbuild-cache
    repos:                    # what `git: site:NAME` in a manifest means
      ascend-c: https://git.team.internal/npu/ascend-c.git

Credentials never go here: registries use Docker's config (docker login) or the
environment, git uses its credential helpers.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from builder.model.errors import StackbuildError

SITE_FILE = "stackbuild.site.yaml"
SECRET_KEY = re.compile(r"pass(word)?|token|secret|credential|auth", re.IGNORECASE)
USERINFO = re.compile(r"^[a-z][a-z0-9+.-]*://[^/@\s]+:[^/@\s]*@", re.IGNORECASE)


class Rewrite(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    from_: str = Field(alias="from", min_length=1)
    to: str


class SiteConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    url_rewrites: list[Rewrite] = Field(default_factory=list)
    installer_dirs: list[Path] = Field(default_factory=list)
    cache_registry: str | None = None
    repos: dict[str, str] = Field(default_factory=dict)
    path: Path | None = Field(default=None, exclude=True)

    def rewrite(self, url: str) -> str:
        """Apply the longest matching rewrite prefix, as git does for insteadOf."""
        matches = [r for r in self.url_rewrites if url.startswith(r.from_)]
        if not matches:
            return url
        best = max(matches, key=lambda r: len(r.from_))
        return best.to + url[len(best.from_) :]

    def repo_url(self, url: str) -> str:
        """A manifest git URL with site:NAME resolved and rewrites applied."""
        if url.startswith("site:"):
            name = url.removeprefix("site:")
            if name not in self.repos:
                where = self.path or f"./{SITE_FILE}"
                raise StackbuildError(
                    f"git URL '{url}' needs repos.{name} in the site configuration ({where}): "
                    f"add `repos: {{{name}: <your team's repository URL>}}`"
                )
            url = self.repos[name]
        return self.rewrite(url)


def _find_secrets(data: object, path: str = "") -> str | None:
    if isinstance(data, dict):
        for key, value in data.items():
            here = f"{path}.{key}" if path else str(key)
            if SECRET_KEY.search(str(key)):
                return here
            if found := _find_secrets(value, here):
                return found
    elif isinstance(data, list):
        for i, value in enumerate(data):
            if found := _find_secrets(value, f"{path}[{i}]"):
                return found
    elif isinstance(data, str) and USERINFO.match(data):
        return path
    return None


def candidates() -> list[Path]:
    paths = []
    if env := os.environ.get("STACKBUILD_SITE_CONFIG"):
        paths.append(Path(env))
    paths.append(Path.cwd() / SITE_FILE)
    config_home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    paths.append(config_home / "stackbuild" / "site.yaml")
    return paths


def load(path: Path | None = None) -> SiteConfig:
    """The site configuration at path, or the first one found; an empty one if none."""
    if path is None:
        path = next((p for p in candidates() if p.is_file()), None)
        if path is None:
            return SiteConfig()
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as err:
        raise StackbuildError(f"{path}: cannot read the site configuration: {err}") from err
    if secret := _find_secrets(data):
        raise StackbuildError(
            f"{path}: {secret}: credentials do not go in the site configuration; use `docker login` "
            "(registries) or a git credential helper, or the environment"
        )
    try:
        return SiteConfig.model_validate({**data, "path": path})
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise StackbuildError(f"{path}: {field}: {first['msg']}") from err
