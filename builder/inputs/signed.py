"""Huawei's catalog zips, unwrapped and verified on the host the way Huawei's installer does it.

A package the catalog lists as `<name>.zip` is a signed wrapper, not the installer: the outer zip
holds `<name>.zip`, its detached CMS signature `<name>.zip.cms` and a CRL; the inner zip holds the
`.run`. ascend-deployer 26.0.0 (`jobs.py`, class ResourcePkg) keeps the outer members that start
with the outer base name once a `.cms` is among them (`_extract_filter_rule`), renames `+` to `.`
in member names (`extract_zip`), takes the CRL of the same name or else the first
(`_get_crl_file`), checks the CRL's signature with the root CA and that the root is not revoked
(`verify_crl`), verifies the inner zip with `openssl cms -verify --no_check_time -inform DER
-binary -purpose any` against Huawei's G2 root, then the older root (`verify_hmac`, `verify_cms`),
and unzips the inner zip (`handle_zip_pkg`). This module does the same, no stricter (a real
package must pass), and writes nothing outside the cache: ascend-deployer's copy of a newer CRL
into /etc/hwsipcrl is a host's business, not a build's.

Only the verified `.run` enters the toolkit stage's context.
"""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from pyasn1.codec.der import decoder as der_decoder

from builder.inputs.site import SiteConfig
from builder.manifest import catalog
from builder.manifest.toolkit import Toolkit
from builder.model.errors import InputError, StackbuildError
from builder.store.cache import Cache
from builder.store.files import sha256_file

RECORDS = "unwrapped"  # cache records: a verified zip's sha256 -> its .run's
VENDOR_RENAMES = {"+": "."}  # ascend-deployer's extract_zip: special_characters


@dataclass(frozen=True)
class Trust:
    """The root CAs a package's signature must chain to, in the order they are tried (ascend-deployer
    tries the G2 root first), and where they came from (for the error that none verified it)."""

    roots: tuple[Path, ...]
    origin: str


def trust_for(toolkit: Toolkit, manifest_dir: Path, site: SiteConfig) -> Trust:
    """The roots a stack's signed packages are verified against: a CPU simulation's own test CAs (its
    manifest's trust), or Huawei's roots and the site's trusted_cas; never one for the other."""
    if toolkit.vendor == "cpusim":
        return Trust(tuple(manifest_dir / path for path in toolkit.trust), "the manifest's toolkit.trust")
    origin = "ascend-deployer's Huawei roots" + (
        f" and the site's trusted_cas ({site.path})" if site.trusted_cas else ""
    )
    return Trust((*catalog.huawei_roots(), *site.trusted_cas), origin)


def run_name(file: str) -> str:
    """The installer a catalog zip holds: `<name>.zip` -> `<name>.run`."""
    return file.removesuffix(".zip") + ".run"


class SignedZip:
    """The form of a package file named `<name>.zip` (builder.inputs.package_forms): the installer it
    gives is the `<name>.run` inside, its signature verified (unwrap), in the cache."""

    tag = "zip"

    def installer_name(self, file: str) -> str:
        return run_name(file)

    def installer(self, path: Path, file: str, trust: Trust, cache: Cache, fix: str, sha256: str | None) -> Path:
        return cache.blob(unwrap(path, file, trust, cache, fix, sha256))


FORM = SignedZip()


def unwrap(path: Path, file: str, trust: Trust, cache: Cache, fix: str, zip_sha256: str | None = None) -> str:
    """The sha256 of the `.run` inside the signed catalog zip at path (named file in the manifest),
    verified against trust and put in the cache. A zip verified once is not unwrapped again while the
    root that verified it is still trusted. zip_sha256: the zip's, when known (a cache blob is named by
    it), so the gigabytes are not read again only to look the record up."""
    zip_sha = zip_sha256 or sha256_file(path)
    record = cache.records.read(RECORDS, zip_sha)
    if record is not None and cache.has(str(record.get("run"))) and record.get("root") in _digests(trust):
        return str(record["run"])
    with cache.scratch.temp_dir() as tmp:
        outer = _members(path, file, tmp / "outer", fix)
        inner_name, (inner, cms, crl) = _triple(outer, file, path, fix)
        root = _verify(inner, cms, crl, trust, file)
        held = _members(inner, PurePosixPath(inner_name).name, tmp / "inner", fix)
        # By its name wherever it is in the inner zip: ascend-deployer extracts the whole inner zip.
        found = [extracted for member, extracted in held.items() if PurePosixPath(member).name == run_name(file)]
        if not found:
            raise InputError(f"{file}: its signed {inner_name} holds no {run_name(file)}: {fix}")
        sha = cache.add_part(found[0], None, run_name(file))
    cache.records.write({"run": sha, "file": run_name(file), "root": sha256_file(root)}, RECORDS, zip_sha)
    return sha


def _digests(trust: Trust) -> set[str]:
    return {sha256_file(root) for root in trust.roots if root.is_file()}


def _members(archive: Path, name: str, into: Path, fix: str) -> dict[str, Path]:
    """The regular files of archive (named name: the package's file name, or its inner zip's), by their
    name in it (`+` renamed as ascend-deployer renames it); each written to into under a number, so no
    name in the archive decides where anything is written."""
    if not zipfile.is_zipfile(archive):
        raise InputError(f"{name}: {archive} is not a zip archive: {fix}")
    into.mkdir()
    found = {}
    with zipfile.ZipFile(archive) as z:
        infos = [i for i in z.infolist() if not i.is_dir()]
        if any(i.filename.endswith(".cms") for i in infos):  # _extract_filter_rule
            base = PurePosixPath(name).stem  # the package's name, not its cache blob's
            infos = [i for i in infos if i.filename.startswith(base)]
        for number, info in enumerate(infos):
            member = info.filename
            for char, replacement in VENDOR_RENAMES.items():
                member = member.replace(char, replacement)
            with z.open(info) as source, (into / str(number)).open("wb") as target:
                shutil.copyfileobj(source, target)
            found[member] = into / str(number)
    return found


def _triple(members: dict[str, Path], file: str, path: Path, fix: str) -> tuple[str, tuple[Path, Path, Path]]:
    """The inner zip's name, and (inner zip, its .cms, the CRL) of an outer zip's members, as
    handle_zip_pkg picks them (the first .cms, the zip it signs, the CRL of that name or the first)."""
    cms = sorted(name for name in members if name.endswith(".cms"))
    crls = sorted(name for name in members if name.endswith(".crl"))
    if not cms or not crls:
        held = ", ".join(sorted(members)[:4]) or "nothing"
        lacking = "no .cms signature" if not cms else "no .crl"
        if run_name(file) in members:
            lacking = f"its {run_name(file)} at the top, unsigned (the old shape)"
        raise InputError(f"{file}: {path} holds {lacking} (it holds {held}), not a signed catalog zip: {fix}")
    inner = cms[0].removesuffix(".cms")
    if inner not in members:
        raise InputError(f"{file}: {path} holds {cms[0]} but not the {inner} it signs: {fix}")
    same_name = [name for name in crls if name.removesuffix(".crl") in inner]
    return inner, (members[inner], members[cms[0]], members[(same_name or crls)[0]])


def _verify(inner: Path, cms: Path, crl: Path, trust: Trust, file: str) -> Path:
    """The first root (G2, then the older root, as verify_hmac tries them; then the site's) that signed
    the CRL and against which inner's CMS signature verifies."""
    if not trust.roots:
        raise InputError(f"{file}: a signed package, and no root CA to verify it with ({trust.origin}: none)")
    reasons = []
    for root in trust.roots:
        try:
            _check_crl(crl, root)
            _check_cms(inner, cms, root)
            return root
        except _Refused as refused:
            reasons.append(f"{root.name}: {refused}")
    raise InputError(f"{file}: its signature does not verify ({'; '.join(reasons)}; roots from {trust.origin})")


class _Refused(StackbuildError):
    pass


def _check_crl(crl_file: Path, root: Path) -> None:
    """verify_crl: the CRL is signed by root, and root is not on it."""
    try:
        crl = _crl(crl_file.read_bytes())
        ca = x509.load_pem_x509_certificate(root.read_bytes())
    except ValueError as err:
        raise _Refused(f"unreadable CRL or root ({err})") from None
    try:
        signed = crl.is_signature_valid(ca.public_key())  # type: ignore[arg-type]
    except (TypeError, InvalidSignature):
        signed = False
    if not signed:
        raise _Refused(f"the CRL {crl_file.name} is not signed by this root")
    if crl.get_revoked_certificate_by_serial_number(ca.serial_number) is not None:
        raise _Refused("the root is revoked by the CRL")


def _crl(data: bytes) -> x509.CertificateRevocationList:
    """verify_crl's reading: a CRL followed by other bytes (cryptography: ExtraData) is read without
    them, where pyasn1 says its DER ends, as ascend-deployer reads it (no stricter)."""
    try:
        return x509.load_der_x509_crl(data)
    except ValueError as err:
        if "ExtraData" not in str(err):
            raise
        _, rest = der_decoder.decode(data)
        return x509.load_der_x509_crl(data[: len(data) - len(rest)])


def _check_cms(inner: Path, cms: Path, root: Path) -> None:
    """verify_cms: the command ascend-deployer runs (its options, in its order)."""
    command = [
        *_openssl(),
        *("cms", "-verify", "--no_check_time", "-in", str(cms), "-inform", "DER", "-CAfile", str(root)),
        *("-binary", "-content", str(inner), "-purpose", "any", "-out", "/dev/null"),
    ]
    run = subprocess.run(command, capture_output=True, text=True, errors="replace")
    if run.returncode != 0:
        lines = [line for line in run.stderr.splitlines() if line.strip()]
        raise _Refused(f"openssl cms -verify: {lines[0] if lines else f'exit {run.returncode}'}")


def _openssl() -> Sequence[str]:
    found = shutil.which("openssl11") or shutil.which("openssl")  # verify_cms prefers openssl11
    if found is None:
        raise StackbuildError("openssl is not installed: it verifies signed packages (apt-get install openssl)")
    return (found,)
