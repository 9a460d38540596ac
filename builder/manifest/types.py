"""The string types of manifests (and of the locks and site configs checked against them).

Every string that can reach a Dockerfile, a command line or a log is checked here: one line
(no control characters) unless it is a script, and for names, URLs, refs and paths the
shape the tools that receive them expect, so nothing read from a file can add a Dockerfile
instruction or reach a command as an option.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from pydantic import AfterValidator, Field

from builder.model.chips import CHIPS

CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
SCRIPT_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
PACKAGE_SCHEMES = ("http", "https", "file")
GIT_SCHEMES = ("http", "https", "git", "ssh", "file")
GIT_REF = re.compile(r"^(?!-)(?!.*\.\.)(?!.*//)[A-Za-z0-9._/+@-]+(?<![./])$")
DEB_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]*(:[a-z0-9-]+)?(=[A-Za-z0-9.+~:-]+)?$")
SUITE = re.compile(r"^[a-z][a-z0-9.-]*$")
SCP_LIKE = re.compile(r"^(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9.-]+:(?!//)[^\s]+$")

# The patterns model fields take (`Field(pattern=...)`): here, so a lock's fields match what its
# manifest's did.
# A component id names a Docker build stage and a build argument in its dependents' Dockerfiles
# (`FROM ${<ID>_IMAGE} AS <id>`): a letter first, then letters, digits and '-' (no '_' or '.').
ID_PATTERN = r"^[a-z][a-z0-9-]*$"
SHA256_PATTERN = r"^[0-9a-f]{64}$"
COMMIT_PATTERN = r"^[0-9a-f]{40}$"
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
VERSION_PATTERN = r"^\d+\.\d+\.(\d+|RC\d+)(\.\w+)?$"
CHIP_PATTERN = rf"^({'|'.join(CHIPS)})$"
IMAGE_PATTERN = r"^[^@\s]+@sha256:[0-9a-f]{64}$"
MODULE_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"

# A run user's name: what useradd takes on Debian, Ubuntu and openEuler alike (their relaxed rules let
# HwHiAiUser's capitals through; a '.', '@' or leading digit not everywhere), at most 32 characters.
USER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,31}")
# A run user's UID and GID: 0 is root's (`user: root`), 65534 nobody's and 65535 the 16-bit -1.
MAX_ID = 65533

# What bootstrapped bases are dated to, and the stages built on any base normalised to unless a lock
# says otherwise; any fixed value works.
SOURCE_DATE_EPOCH = 1704067200  # 2024-01-01T00:00:00Z
# A lock's SOURCE_DATE_EPOCH: seconds since 1970, up to the last second of year 9999, the last a date
# in the images' `created` fields (RFC 3339) can name.
Epoch = Annotated[int, Field(ge=0, le=253402300799)]


def one_line(value: str) -> str:
    if match := CONTROL.search(value):
        raise ValueError(
            f"contains a control character ({match.group()!r}): this field is one line of text"
            if match.group() != "\n"
            else "contains a line break: this field is one line of text"
        )
    return value


def script(value: str) -> str:
    if match := SCRIPT_CONTROL.search(value):
        raise ValueError(f"contains a control character ({match.group()!r}): only tabs and line breaks may appear")
    return value


def regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as err:
        raise ValueError(f"{value!r} is not a valid regular expression: {err}") from None
    return value


def no_option(value: str) -> str:
    if value.startswith("-"):
        raise ValueError(f"{value[:60]!r} starts with '-': it would reach a command as an option")
    return value


def file_name(value: str) -> str:
    if "/" in value:
        raise ValueError(f"'file' must be a bare file name, not a path: {value[:80]}")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", value):
        raise ValueError(f"{value[:80]!r} is not a package file name (letters, digits, '.', '_', '+', '-')")
    return value


def no_credentials(url: str) -> str:
    """URLs end up in locks and logs: a user[:password]@ part is refused (without echoing it)."""
    if re.match(r"^[a-z][a-z0-9+.-]*://[^/@\s]+@", url, re.IGNORECASE):
        raise ValueError(
            "the URL carries credentials (user:password@): use a git credential helper, "
            "`docker login` or the site configuration's URL rewrites instead"
        )
    return url


def _scheme(url: str, schemes: tuple[str, ...]) -> str:
    try:
        parts = urlsplit(url)
    except ValueError as err:
        raise ValueError(f"not a valid URL ({err})") from None
    if parts.scheme not in schemes:
        raise ValueError(f"a URL with one of the schemes {', '.join(schemes)} is expected")
    return url


def download_url(url: str) -> str:
    return no_credentials(_scheme(no_option(url), PACKAGE_SCHEMES))


def git_url(url: str) -> str:
    no_option(url)
    if url.startswith("site:"):
        if not re.fullmatch(r"site:[A-Za-z0-9._-]+", url):
            raise ValueError("site:NAME takes a name of letters, digits, '.', '_' and '-'")
        return url
    if "://" not in url and SCP_LIKE.match(url):
        return url  # git@host:org/repo.git
    return no_credentials(_scheme(url, GIT_SCHEMES))


def git_ref(value: str) -> str:
    if not GIT_REF.match(value):
        raise ValueError(f"{value[:80]!r} is not a branch, tag or commit name git accepts")
    return value


def deb_package(value: str) -> str:
    if not DEB_PACKAGE.match(value):
        raise ValueError(f"{value[:80]!r} is not a Debian package name (name[:arch][=version])")
    return value


def suite(value: str) -> str:
    if not SUITE.match(value):
        raise ValueError(f"{value[:80]!r} is not a Debian suite name (e.g. bookworm)")
    return value


def relative_path(value: str) -> str:
    """A path that stays where it is put: relative, no '..', no empty or '.' parts."""
    parts = value.split("/")
    if value.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"{value[:80]!r} must be a relative path without '..', '.' or empty parts")
    return value


def requirement(value: str) -> str:
    """A PEP 508 requirement resolved through the index (no direct URLs: they bypass the site's index)."""
    no_option(value)
    try:
        parsed = Requirement(value)
    except InvalidRequirement as err:
        raise ValueError(f"{value[:80]!r} is not a requirement line ({err})") from None
    if parsed.url:
        raise ValueError(f"{value[:80]!r}: direct URLs are not allowed; name the package and pin it with ==")
    return value


def python_index(value: str) -> str:
    """A package index URL, or a wheelhouse directory (relative to the manifest)."""
    if re.match(r"^[a-z][a-z0-9+.-]*://", value):
        return download_url(value)
    return no_option(value)


def literal_path(value: str) -> str:
    """Docker expands $VARIABLES in COPY paths, even in JSON form: a path taken literally has none."""
    if "$" in value or "\\" in value:
        raise ValueError(f"{value[:80]!r}: '$' and '\\' are not allowed in paths Docker copies")
    return value


Line = Annotated[str, AfterValidator(one_line)]
RelativePath = Annotated[str, AfterValidator(one_line), AfterValidator(relative_path)]
CopyPath = Annotated[str, AfterValidator(one_line), AfterValidator(literal_path)]
Script = Annotated[str, AfterValidator(script)]
Regex = Annotated[str, AfterValidator(one_line), AfterValidator(regex)]
FileName = Annotated[str, AfterValidator(one_line), AfterValidator(file_name)]
DownloadUrl = Annotated[str, AfterValidator(one_line), AfterValidator(download_url)]
GitUrl = Annotated[str, AfterValidator(one_line), AfterValidator(git_url)]
GitRef = Annotated[str, AfterValidator(one_line), AfterValidator(git_ref)]
DebPackage = Annotated[str, AfterValidator(deb_package)]
Suite = Annotated[str, AfterValidator(suite)]
MirrorUrl = Annotated[str, AfterValidator(one_line), AfterValidator(download_url)]
PythonRequirement = Annotated[str, AfterValidator(one_line), AfterValidator(requirement)]
PythonIndex = Annotated[str, AfterValidator(one_line), AfterValidator(python_index)]
# What a toolkit installer package is to the stack (its manifest entries and its pins have one each).
PackageRole = Literal["toolkit", "ops", "nnal"]
