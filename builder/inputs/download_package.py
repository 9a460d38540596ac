"""The download kind of installer package: a file at a URL, pinned by its sha256 (the manifest's, or
that of its first download), taken from the site's installer directories when one holds it, else
downloaded with the headers the vendor's own downloader sends."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from builder.inputs.package_kinds import v1_pinned
from builder.manifest.basemodel import Frozen, Model
from builder.manifest.types import SHA256_PATTERN, DownloadUrl, FileName, PackageRole
from builder.model.plugins import Upgrades

if TYPE_CHECKING:
    from builder.inputs.package_kinds import Obtaining, Resolving
    from builder.inputs.signed import Trust
    from builder.model.say import Say

# A kind is loaded with the manifest model, by every command: what finding, downloading and verifying
# a file need (the network layer, the signature checks) is imported where they run.


class DownloadPackage(Model):
    """An installer file downloaded from `url`."""

    TAG: ClassVar[str] = "url"
    file: FileName = Field(description="installer file name, e.g. Ascend-cann-toolkit_8.5.0_linux-x86_64.zip")
    url: DownloadUrl = Field(description="where to download it (site URL rewrites apply)")
    sha256: str | None = Field(
        default=None,
        pattern=SHA256_PATTERN,
        description="expected sha256 (hex); without it the lock pins the first download",
    )


class LockedDownload(Frozen):
    kind: Literal["download"] = "download"
    role: PackageRole
    file: FileName
    url: DownloadUrl
    sha256: str = Field(pattern=SHA256_PATTERN)
    size: int | None = None


def _from_v1(pin: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "download", "url": pin["url"], **v1_pinned(pin)}


class DownloadKind:
    tag = "download"
    hint = "'url' (download)"
    spec = DownloadPackage
    locked = LockedDownload
    upgrades: Upgrades = MappingProxyType({1: _from_v1})

    def lock(
        self, role: PackageRole, spec: DownloadPackage, trust: Trust, vendor: str, where: Resolving
    ) -> LockedDownload:
        sha, size = _pinned(spec, vendor, trust, where)
        return LockedDownload(role=role, file=spec.file, url=spec.url, sha256=sha, size=size)

    def entry(self, form: DownloadPackage | LockedDownload) -> dict[str, object]:
        return {"url": form.url}

    def drift(self, locked: LockedDownload, spec: DownloadPackage, where: Obtaining) -> None:
        return None  # not downloaded again to tell: the sha256 pins what a build takes

    def at_hand(self, locked: LockedDownload, trust: Trust, where: Obtaining) -> None:
        from builder.inputs import packages

        packages.at_hand(locked.file, locked.sha256, trust, where.site, where.cache)

    def fetch(self, locked: LockedDownload, vendor: str, say: Say, where: Obtaining) -> str:
        from builder.inputs import packages

        file, site, cache = locked.file, where.site, where.cache
        return packages.download(locked.url, file, locked.sha256, site, cache, say, vendor, size=locked.size)

    def unpinned(self, spec: DownloadPackage) -> bool:
        return not spec.sha256


def _pinned(spec: DownloadPackage, vendor: str, trust: Trust, where: Resolving) -> tuple[str, int | None]:
    """(sha256, size) of a package: a local copy; the manifest's pin as it is (no network: an air-gapped
    site fetches at build time); else the whole file downloaded and hashed (never a HEAD's word), with
    the headers the vendor's own downloader sends."""
    from builder.inputs import packages
    from builder.inputs.package_forms import installer
    from builder.manifest import catalog
    from builder.model.errors import Unreached
    from builder.store.http import NoAnswer, Progress, SizeLimit, redact

    file, url, pinned = spec.file, spec.url, spec.sha256
    site, cache, say = where.site, where.cache, where.say
    if (local := packages.find_installer(site, file, pinned)) is not None:
        installer(local, file, trust, cache, packages.FIX_PIN if pinned else packages.REPLACE)
        sha = cache.add_file(local, pinned)
        say(f"  {file}: found in {local.parent} (installer_dirs)")
        return sha, local.stat().st_size
    if pinned and cache.has(pinned):
        installer(cache.blob(pinned), file, trust, cache, packages.FIX_PIN, pinned)
        say(f"  {file}: in the cache")
        return pinned, cache.blob(pinned).stat().st_size
    if pinned:
        say(f"  {file}: in no installer_dirs directory: downloaded when a build needs it, checked against its pin")
        return pinned, None
    say(f"  {file}: no sha256 in the manifest, downloading to pin it")
    try:
        sha = where.client.download(
            site.rewrite(url),
            cache,
            progress=Progress(f"  {file}", say),
            headers=catalog.vendor_headers(vendor),
            limit=SizeLimit(site.download_limit),
        )
    except NoAnswer as err:  # nothing to pin it with: the file itself is the only source of its sha256
        raise Unreached(
            f"{file}: {err.reason}: without a sha256 in the manifest the lock needs the file: lock where "
            f"that host answers, put the file in an installer_dirs directory, or point the URL at a mirror "
            f"with url_rewrites (both in {site.where})"
        ) from err
    installer(cache.blob(sha), file, trust, cache, f"{redact(url)} gives another file: fix the url", sha)
    return sha, cache.blob(sha).stat().st_size


KIND = DownloadKind()
