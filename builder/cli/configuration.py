"""The one place stackbuild's settings are resolved, and the one module that reads its environment
variables: for each setting the command line's value, else the environment's, else the site file's,
else the default (the site file holds none of these yet: credentials never go there, and where it is
cannot come from itself). The result is a frozen Settings the commands pass down as values."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from builder.model.errors import InputError
from builder.model.names import COMPONENT, DEFAULT_PREFIX
from builder.model.settings import BUILDERS, SITE_FILE, RegistryCredentials, Settings


def resolve(environ: Mapping[str, str], project: Path, site_config: Path | None = None) -> Settings:
    """The settings for a command run in project: site_config is --site-config's (None: not given)."""
    return Settings(
        cache_root=_without_home(lambda: cache_root(environ)),
        site_config=site_config or _site_config(environ, project),
        host_root=Path(environ.get("STACKBUILD_HOST_ROOT") or "/"),
        builder=_builder(environ),
        credentials=_credentials(environ),
        image_prefix=_image_prefix(environ),
        visible_devices=environ.get("ASCEND_VISIBLE_DEVICES"),
    )


def cache_root(environ: Mapping[str, str]) -> Path:
    """$STACKBUILD_CACHE, else the user's cache directory's stackbuild/."""
    if given := environ.get("STACKBUILD_CACHE"):
        return Path(given)
    return Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "stackbuild"


def _site_config(environ: Mapping[str, str], project: Path) -> Path | None:
    """$STACKBUILD_SITE_CONFIG (site.load refuses it if it is not a file, when a command reads it), else
    the first that exists of the project's, the current directory's and the user's site configuration."""
    if given := environ.get("STACKBUILD_SITE_CONFIG"):
        return Path(given)
    user = _without_home(lambda: Path(environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"))
    found = [*dict.fromkeys(top / SITE_FILE for top in (project, Path.cwd()))]
    found += [user / "stackbuild" / "site.yaml"] if user is not None else []
    return next((path for path in found if path.is_file()), None)


def _without_home(default: Callable[[], Path]) -> Path | None:
    """A default under the user's home directory, None where there is none (Path.home() cannot tell)."""
    try:
        return default()
    except RuntimeError:
        return None


def _builder(environ: Mapping[str, str]) -> str:
    """$STACKBUILD_BUILDER, refused here when it names no builder (a typo is the user's to fix, not
    the host's to set up)."""
    builder = environ.get("STACKBUILD_BUILDER") or "auto"
    if builder not in BUILDERS:
        raise InputError(
            f"STACKBUILD_BUILDER={builder[:40]!r} names no builder: say one of {', '.join(BUILDERS)}, or unset it"
        )
    return builder


def _image_prefix(environ: Mapping[str, str]) -> str:
    """$STACKBUILD_IMAGE_PREFIX, refused here unless it is one repository name component (every image
    name is made from it: a '/' or ':' in it would name another registry or tag)."""
    prefix = environ.get("STACKBUILD_IMAGE_PREFIX") or DEFAULT_PREFIX
    if not COMPONENT.fullmatch(prefix):
        raise InputError(
            f"STACKBUILD_IMAGE_PREFIX={prefix[:80]!r} is not one repository name component (lower-case "
            "letters and digits, joined by '.', '_', '__' or '-'): fix or unset it"
        )
    return prefix


def _credentials(environ: Mapping[str, str]) -> RegistryCredentials | None:
    """STACKBUILD_REGISTRY_USERNAME and _PASSWORD, both or neither, for the registry
    STACKBUILD_REGISTRY_HOST names (host[:port]); without it, for the one the command names."""
    user, password = environ.get("STACKBUILD_REGISTRY_USERNAME"), environ.get("STACKBUILD_REGISTRY_PASSWORD")
    if bool(user) != bool(password):
        raise InputError("set both STACKBUILD_REGISTRY_USERNAME and STACKBUILD_REGISTRY_PASSWORD, or neither")
    if not user or not password:
        return None
    return RegistryCredentials(user, password, environ.get("STACKBUILD_REGISTRY_HOST") or None)
