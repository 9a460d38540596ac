"""Installer packages: found in the site's installer directories, generated, or downloaded."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from builder.inputs import package_forms
from builder.inputs.signed import Trust
from builder.inputs.site import SiteConfig
from builder.manifest import catalog
from builder.model.errors import StackbuildError
from builder.model.say import Say
from builder.store.cache import Cache
from builder.store.files import sha256_file
from builder.store.http import HttpClient, NoAnswer, Progress, SizeLimit, Unreachable, must_answer


def generate(command: str, file: str, manifest_dir: Path, cache: Cache, expected: str | None = None) -> str:
    """Run a package's generate command and put its output in the cache; its sha256."""
    with cache.scratch.temp_dir() as out:
        run = subprocess.run(
            command.replace("{output_dir}", shlex.quote(str(out))),
            shell=True,
            cwd=manifest_dir,
            capture_output=True,
            text=True,
        )
        produced = out / file
        if run.returncode != 0 or not produced.is_file():
            detail = run.stderr.strip().splitlines()[-1:] or [f"{file} was not written"]
            raise StackbuildError(f"generating {file} failed: {detail[0]}")
        return cache.add_part(produced, expected, file)


def find_installer(site: SiteConfig, file: str, sha256: str | None) -> Path | None:
    """The file in the site's installer directories; one there with another sha256 than pinned is an error
    (a corrupt or wrong copy must be named, not skipped for a download that cannot work air-gapped)."""
    wrong = []
    for directory in site.installer_dirs:
        candidate = directory / file
        if not candidate.is_file():
            continue
        found = sha256_file(candidate)
        if sha256 is None or found == sha256:
            return candidate
        wrong.append(f"{candidate} has sha256 {found}")
    if wrong:
        raise StackbuildError(f"{file}: {'; '.join(wrong)}, the manifest pins {sha256}: {_remedy(file, sha256, found)}")
    return None


def _remedy(file: str, pinned: str | None, found: str) -> str:
    """What to change when a local copy is not the pinned file: the catalog says which side is wrong, so
    the advice never leads to a pin that only a compatibility flag would let through."""
    entry = catalog.published(file)
    if entry is not None and entry.sha256 == pinned:
        return "the pin is the catalog's, so the file is not the one the vendor publishes: replace it"
    if entry is not None and entry.sha256 == found:
        return f"the file is the one the catalog lists: pin its sha256 {found} in the manifest"
    return "replace the file or fix the pin"


REPLACE = "replace it with the file the vendor publishes"
FIX_PIN = "the pinned sha256 is of a file that is not what its name says: pin the vendor's file (and its url), relock"


def at_hand(file: str, sha256: str, trust: Trust, site: SiteConfig, cache: Cache) -> Path | None:
    """The package's installer in the cache (from an installer directory when one holds it, checked
    there first), verified to be what its name says; None: it is to be downloaded."""
    with cache.locks.exclusive(f"blob-{sha256}"):
        if not cache.has(sha256) and (local := find_installer(site, file, sha256)) is not None:
            # It is the pinned file: the pin is wrong as well.
            package_forms.installer(local, file, trust, cache, FIX_PIN)
            cache.add_file(local, sha256)
    if not cache.has(sha256):
        return None
    return package_forms.installer(cache.blob(sha256), file, trust, cache, FIX_PIN, sha256)


def download(
    url: str, file: str, sha256: str | None, site: SiteConfig, cache: Cache, say: Say, vendor: str, *, size: int | None
) -> str:
    """The package in the cache: from an installer directory if there, else downloaded with the
    headers the vendor's own downloader sends (and the site's for that host); its sha256. size: the
    lock's for it (the download stops there), None: the site's download_limit bounds it."""
    if sha256 and cache.has(sha256):
        return sha256
    if (local := find_installer(site, file, sha256)) is not None:
        return cache.add_file(local, sha256)
    say(f"downloading {file}")
    try:
        must_answer(site.rewrite(url), file, url)  # seconds, where a download's retries take a minute
        client = HttpClient(headers=site.headers)
        limit = SizeLimit.of(size, site.download_limit)
        return client.download(
            site.rewrite(url), cache, sha256, Progress(file, say), catalog.vendor_headers(vendor), limit=limit
        )
    except NoAnswer as err:  # its host is down or out of reach: the lock records the part unresolved
        missing = NoAnswer(_missing(file, site, err), url)
        missing.reason = err.reason
        raise missing from err
    except Unreachable as err:  # a wrong sha256 or a full disk is said as it is
        raise StackbuildError(_missing(file, site, err)) from err


def _missing(file: str, site: SiteConfig, err: Unreachable) -> str:
    """One line: where the package was looked for, why the download failed, and how to supply it."""
    config = site.path or "none found, e.g. ./stackbuild.site.yaml"
    dirs = ", ".join(map(str, site.installer_dirs)) or "none listed"
    return (
        f"{file} is in no installer_dirs directory (site configuration: {config}; installer_dirs: {dirs}) and "
        f"cannot be downloaded ({err}): put the file in a directory listed as `installer_dirs: [DIR]` in the "
        "site configuration, or map its URL to a mirror with `url_rewrites`"
    )
