"""stackbuild's own settings, resolved once by the command line (builder.cli.configuration: command
line > environment > site file > defaults) and handed down as values: nothing below the command line
reads them from the environment. The registry password is kept out of every repr, log line and record."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from builder.model.names import DEFAULT_PREFIX

BUILDERS = ("auto", "buildkit", "classic")  # auto: BuildKit when a docker CLI has it, else classic
SITE_FILE = "stackbuild.site.yaml"  # a project's site configuration, at its root


@dataclass(frozen=True)
class RegistryCredentials:
    """A registry login from the environment (CI secrets), which takes precedence over Docker's config."""

    username: str
    password: str = field(repr=False)
    host: str | None = None  # the registry (host[:port]) they go to, and no other; None: any

    def for_registry(self, registry: str) -> dict[str, str] | None:
        """What a request to registry sends (docker-py's auth_config), or None: Docker's config decides."""
        if self.host is not None and self.host != registry:
            return None
        return {"username": self.username, "password": self.password}


def login_for(credentials: RegistryCredentials | None, registry: str) -> dict[str, str] | None:
    """What a request to registry sends from these credentials (None: Docker's config decides)."""
    return credentials.for_registry(registry) if credentials else None


@dataclass(frozen=True)
class Settings:
    # Every cached input, record and scratch directory; None: no home directory to default to and
    # none given (commands that need no cache, `validate`, run all the same).
    cache_root: Path | None
    site_config: Path | None  # the site configuration read, None: none (an empty one)
    host_root: Path  # where /dev and the NPU driver are looked for (a test tree stands in for /)
    builder: str = "auto"  # one of BUILDERS
    credentials: RegistryCredentials | None = None
    image_prefix: str = DEFAULT_PREFIX  # every image name stackbuild gives starts with it (builder.model.names)
    # The caller's ASCEND_VISIBLE_DEVICES: the NPUs `run` and `shell` give through the Ascend Docker Runtime.
    visible_devices: str | None = None
