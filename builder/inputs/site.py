"""Site configuration: mirrors, local installer directories, the cache registry, team repos.

Which file is read is a setting (builder.cli.configuration): --site-config, else
$STACKBUILD_SITE_CONFIG, else the first that exists of the project's stackbuild.site.yaml, the
current directory's, $XDG_CONFIG_HOME/stackbuild/site.yaml (~/.config/...).

    url_rewrites:             # like git's insteadOf, for internal mirrors
      - {from: "https://github.com/", to: "https://git.mirror.internal/github/"}
    installer_dirs: [/srv/cann]   # looked in (by file name + sha256) before any download
    trusted_cas: [/srv/ca.pem]    # a private mirror's root CA, trusted for signed packages beside Huawei's
    deb_dirs: [/srv/debs]         # the same, for the .debs a lock pins
    deb_snapshots:                # tried after the repository for a .deb it no longer serves
      - https://snapshot.internal/debian/20251101T000000Z
    python_index: /srv/wheelhouse # replaces every manifest's python_index (an index URL or a directory)
    cache_registry: registry.internal:5000/stackbuild-cache   # stages pulled from there (build --cache-from)
    cache_push: false             # true: stages also pushed there once probed (CI; build --cache-to)
    repos:                    # what `git: site:NAME` in a manifest means
      ascend-c: https://git.team.internal/npu/ascend-c.git
    headers:                  # sent to that host only (host or host:port), never to another
      mirror.internal: {X-Mirror-Group: npu-team}
    fsck_skip:                # git object checks let through for one repository (as the manifest or a
      https://git.team.internal/old.git: [missingSpaceBeforeDate]   # .gitmodules names it), by message id
    download_limit: 16GiB     # the most a download whose size the lock does not record may be

Credentials never go here: registries use Docker's config (docker login) or the
environment, git uses its credential helpers.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ByteSize, ConfigDict, Field, ValidationError

from builder.inputs.git import FSCK_MESSAGE
from builder.manifest import yamlpos
from builder.manifest.types import GitUrl, Line, no_option, one_line
from builder.model.errors import InputError, ManifestError
from builder.model.registry import registry_repo
from builder.model.settings import SITE_FILE

# A key named like a secret (registry_password, token, auth); "oauth-tools" is not one.
SECRET_KEY = re.compile(r"(^|[_-])(pass(word)?|passwd|token|secret|credentials?|auth)($|[_-])", re.IGNORECASE)
USERINFO = re.compile(r"^[a-z][a-z0-9+.-]*://[^/@\s]+@", re.IGNORECASE)
QUERY_SECRET = re.compile(r"[?&][^=&]*(token|password|secret|key|auth)[^=&]*=", re.IGNORECASE)


# A rewrite target is a URL prefix that git and the downloader will be given: never an option.
RewriteTarget = Annotated[str, AfterValidator(one_line), AfterValidator(no_option)]
RegistryRepo = Annotated[str, AfterValidator(one_line), AfterValidator(registry_repo)]
HEADER_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}(:[0-9]{1,5})?")
HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}")  # an HTTP token (RFC 9110)
# A header that carries a credential (Authorization, X-Api-Key, Cookie, X-Auth-Token, a session id).
SECRET_HEADER = re.compile(r"(auth|token|key|secret|pass|cookie|session|credential|api)", re.IGNORECASE)


def fsck_message(value: str) -> str:
    """An fsck message id (git's names: duplicateEntries, missingSpaceBeforeDate, ...): one check, never all."""
    if not FSCK_MESSAGE.match(value):
        raise ValueError(f"{value[:80]!r} is not a git fsck message id (such as missingSpaceBeforeDate)")
    return value


def header_table(value: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """headers: {host or host:port: {name: value}}, each a header HTTP can carry, none a credential."""
    for host, headers in value.items():
        if not HEADER_HOST.fullmatch(host):
            raise ValueError(f"{host[:80]!r} is not a host name (host or host:port, no scheme or path)")
        for name, text in headers.items():
            if not HEADER_NAME.fullmatch(name):
                raise ValueError(f"{host}: {name[:80]!r} is not an HTTP header name")
            if SECRET_HEADER.search(name):
                raise ValueError(f"{host}: {name}: credentials do not go in the site configuration")
            try:
                one_line(text)
            except ValueError as err:
                raise ValueError(f"{host}: {name}: {err}") from None
            if text != text.strip():
                raise ValueError(f"{host}: {name}: a header value has no leading or trailing blanks")
    return value


class Rewrite(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    from_: Line = Field(alias="from", min_length=1)
    to: RewriteTarget


class SiteConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    url_rewrites: list[Rewrite] = Field(default_factory=list)
    installer_dirs: list[Path] = Field(default_factory=list)
    trusted_cas: list[Path] = Field(default_factory=list)
    deb_dirs: list[Path] = Field(default_factory=list)
    deb_snapshots: list[RewriteTarget] = Field(default_factory=list)
    python_index: RewriteTarget | None = None
    cache_registry: RegistryRepo | None = None
    cache_push: bool = False
    repos: dict[str, GitUrl] = Field(default_factory=dict)
    headers: Annotated[dict[str, dict[str, str]], AfterValidator(header_table)] = Field(default_factory=dict)
    fsck_skip: dict[GitUrl, list[Annotated[str, AfterValidator(fsck_message)]]] = Field(default_factory=dict)
    # Bytes, or a size ("16GiB", "500MB"): the most a download the lock records no size for may be
    # (an endless body stops there); the default is above any CANN package (the largest are a few GB).
    download_limit: ByteSize = Field(default=ByteSize(16 << 30), gt=0)
    # The most each component's compile cache keeps (bytes, or "5GiB"); 0: component builds use none.
    compile_cache_size: ByteSize = Field(default=ByteSize(5 << 30), ge=0)
    path: Path | None = Field(default=None, exclude=True)

    @property
    def where(self) -> str:
        """The file it was read from, or where one is looked for first (for the lines that say what to add)."""
        return str(self.path or f"./{SITE_FILE}")

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
                raise InputError(
                    f"git URL '{url}' needs repos.{name} in the site configuration ({self.where}): "
                    f"add `repos: {{{name}: <your team's repository URL>}}`"
                )
            url = self.repos[name]
        return self.rewrite(url)

    def skipped_checks(self, url: str) -> tuple[str, ...]:
        """The git object checks this site lets through for the repository a manifest or .gitmodules names url."""
        return tuple(self.fsck_skip.get(url, ()))


def _secret_in_value(data: object, path: str) -> str | None:
    if isinstance(data, dict):
        return next((f for k, v in data.items() if (f := _secret_in_value(v, f"{path}.{k}" if path else str(k)))), None)
    if isinstance(data, list):
        return next((f for i, v in enumerate(data) if (f := _secret_in_value(v, f"{path}[{i}]"))), None)
    if isinstance(data, str) and (USERINFO.match(data) or QUERY_SECRET.search(data)):
        return path
    return None


def _find_secrets(data: dict[str, object]) -> str | None:
    """The field holding a credential: a secret-like key (outside repo names), or a URL with one."""
    for key in data:
        if SECRET_KEY.search(str(key)):
            return str(key)
    rewrites = data.get("url_rewrites")
    for i, rewrite in enumerate(rewrites if isinstance(rewrites, list) else []):
        for key in rewrite if isinstance(rewrite, dict) else {}:
            if SECRET_KEY.search(str(key)):
                return f"url_rewrites[{i}].{key}"
    return _secret_in_value(data, "")


def load(path: Path | None = None) -> SiteConfig:
    """The site configuration at path (builder.cli.configuration says which); an empty one if none."""
    if path is None:
        return SiteConfig()
    if not path.is_file():
        raise InputError(
            f"the site configuration named is {path}, which is not a file: fix or unset --site-config or "
            "STACKBUILD_SITE_CONFIG"
        )
    try:
        data = yamlpos.read(path).data
    except ManifestError as err:
        raise InputError(f"cannot read the site configuration: {err.problems[0]}") from err
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise InputError(f"{path}: a site configuration is a YAML mapping (url_rewrites: ..., repos: ...)")
    if secret := _find_secrets(data):
        raise InputError(
            f"{path}: {secret}: credentials do not go in the site configuration; use `docker login` "
            "(registries) or a git credential helper, or the environment"
        )
    try:
        config = SiteConfig.model_validate({**data, "path": path})
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise InputError(f"{path}: {field}: {first['msg'].removeprefix('Value error, ')}") from err
    # Relative directories are the file's, wherever stackbuild runs from.
    return config.model_copy(
        update={key: [path.parent / d for d in getattr(config, key)] for key in ("installer_dirs", "deb_dirs")}
    )
