"""Packages as Huawei ships them (issue 49): a catalog zip is a signed wrapper (outer zip -> inner zip
+ `.zip.cms` + `.crl` -> `.run`), unwrapped and verified on the host as ascend-deployer does it, and
Huawei's own installer code is the oracle for the shape the reference stack ships."""

from __future__ import annotations

import datetime
import hashlib
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from builder import lock as lock_io
from builder import manifest
from builder.inputs import package_forms, packages, signed
from builder.inputs.download_package import DownloadPackage
from builder.inputs.generated_package import LockedGenerated
from builder.inputs.signed import Trust
from builder.inputs.site import SiteConfig
from builder.lock import resolve as lock_resolve
from builder.lock.locked import LockedPackage
from builder.lock.resolver import Resolver
from builder.manifest import catalog
from builder.model.arch import Arch
from builder.model.errors import InputError
from builder.store import files
from builder.store.cache import Cache
from builder.store.http import HttpClient
from tests.conftest import REFERENCE, ROOT
from tests.helpers import run_cli

TEST_CA = REFERENCE / "toolkit" / "test-ca"
RUN = "Ascend-cann-toolkit_8.3.RC1_linux-x86_64.run"
ZIP = RUN.removesuffix(".run") + ".zip"


def _signer() -> ModuleType:
    """The reference stack's own signer (stacks/reference/toolkit/sign.py), as its manifest runs it."""
    spec = importlib.util.spec_from_file_location("reference_sign", REFERENCE / "toolkit" / "sign.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SIGN = _signer()


def _test_ca() -> tuple[rsa.RSAPrivateKey, x509.Certificate, bytes]:
    key = serialization.load_pem_private_key((TEST_CA / "ca.key").read_bytes(), password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    return key, x509.load_pem_x509_certificate((TEST_CA / "ca.pem").read_bytes()), (TEST_CA / "ca.crl").read_bytes()


def _other_ca(where: Path) -> tuple[rsa.RSAPrivateKey, x509.Certificate, bytes]:
    """A CA nobody trusts, with its own CRL; its certificate written to where/other.pem."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "another CA")])
    start = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    end = datetime.datetime(2099, 1, 1, tzinfo=datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(7)
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    crl = x509.CertificateRevocationListBuilder().issuer_name(name).last_update(start).next_update(end)
    (where / "other.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key, cert, crl.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.DER)


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def _run_bytes() -> bytes:
    return b"#!/bin/sh\necho the reference toolkit\n"


def good_zip() -> bytes:
    return bytes(SIGN.signed_zip(RUN, _run_bytes(), *_test_ca()))


def unsigned_members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def shapes(tmp_path: Path) -> dict[str, tuple[bytes, str]]:
    """Zips that are not a signed catalog zip of the test CA, and what stackbuild says of each."""
    members = unsigned_members(good_zip())
    stem = ZIP.removesuffix(".zip")
    return {
        "another-ca": (SIGN.signed_zip(RUN, _run_bytes(), *_other_ca(tmp_path)), "its signature does not verify"),
        "no-cms": (_zip({k: v for k, v in members.items() if not k.endswith(".cms")}), "holds no .cms signature"),
        "run-at-top": (_zip({RUN: _run_bytes()}), f"holds its {RUN} at the top, unsigned (the old shape)"),
        "wrong-inner": (
            _zip(
                {f"{stem}.zip": _zip({"other.run": b"x"}), **{k: v for k, v in members.items() if k != f"{stem}.zip"}}
            ),
            "its signature does not verify",  # the signature covers the inner zip's bytes
        ),
    }


def test_the_reference_signer_gives_the_same_bytes_every_time() -> None:
    assert good_zip() == good_zip()


def test_a_signed_zip_gives_its_verified_run_into_the_cache(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    blob = cache.blob(cache.add_file(_written(tmp_path / ZIP, good_zip())))  # named by its sha256 there
    trust = Trust((TEST_CA / "ca.pem",), "the test")
    sha = signed.unwrap(blob, ZIP, trust, cache, "fix it")
    assert cache.blob(sha).read_bytes() == _run_bytes()
    assert signed.unwrap(blob, ZIP, trust, cache, "fix it") == sha  # from the record, once verified
    _other_ca(tmp_path)
    with pytest.raises(InputError, match="its signature does not verify"):  # not while its root is trusted no more
        signed.unwrap(blob, ZIP, Trust((tmp_path / "other.pem",), "the test"), cache, "fix it")


def test_a_verified_zip_whose_sha256_is_known_is_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lock, input preparation and the context each ask for the .run: a zip named by its sha256 (a cache
    blob) is looked up by it, not hashed again (a real toolkit zip is gigabytes)."""
    cache = Cache(tmp_path / "cache")
    zip_sha = cache.add_file(_written(tmp_path / ZIP, good_zip()))
    trust = Trust((TEST_CA / "ca.pem",), "the test")
    run = package_forms.installer(cache.blob(zip_sha), ZIP, trust, cache, "fix it", zip_sha)
    read: list[Path] = []
    hashed = files.sha256_file

    def counted(path: Path) -> str:
        read.append(path)
        return hashed(path)

    monkeypatch.setattr("builder.inputs.signed.sha256_file", counted)
    assert package_forms.installer(cache.blob(zip_sha), ZIP, trust, cache, "fix it", zip_sha) == run
    assert cache.blob(zip_sha) not in read, read
    assert package_forms.installer(cache.blob(zip_sha), ZIP, trust, cache, "fix it") == run
    assert cache.blob(zip_sha) in read  # not known: hashed, as before


def _written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("shape", ["another-ca", "no-cms", "run-at-top", "wrong-inner"])
def test_what_is_not_a_signed_zip_of_a_trusted_ca_is_refused_in_one_line(tmp_path: Path, shape: str) -> None:
    data, says = shapes(tmp_path)[shape]
    (tmp_path / ZIP).write_bytes(data)
    cache = Cache(tmp_path / "cache")
    with pytest.raises(InputError, match=f"^{re.escape(ZIP)}: .*{re.escape(says)}") as refused:
        signed.unwrap(tmp_path / ZIP, ZIP, Trust((TEST_CA / "ca.pem",), "the test"), cache, "fix it")
    assert "\n" not in str(refused.value)
    assert not cache.blob_files()  # nothing of it entered the cache


def test_a_crl_followed_by_other_bytes_is_read_as_huawei_installer_reads_it(tmp_path: Path) -> None:
    """ascend-deployer's verify_crl strips what follows the CRL's DER (pyasn1) rather than refuse it."""
    key, cert, crl = _test_ca()
    (tmp_path / ZIP).write_bytes(SIGN.signed_zip(RUN, _run_bytes(), key, cert, crl + b"\x00\x01trailing"))
    cache = Cache(tmp_path / "c")
    sha = signed.unwrap(tmp_path / ZIP, ZIP, Trust((TEST_CA / "ca.pem",), "the test"), cache, "fix")
    assert cache.blob(sha).read_bytes() == _run_bytes()
    assert huawei_installer(tmp_path, tmp_path / ZIP).returncode == 0  # the oracle takes it too


def test_a_root_the_crl_revokes_verifies_nothing(tmp_path: Path) -> None:
    key, cert, _ = _test_ca()
    now = datetime.datetime(2024, 6, 1, tzinfo=datetime.timezone.utc)
    revoked = x509.RevokedCertificateBuilder().serial_number(cert.serial_number).revocation_date(now).build()
    crl = (
        x509.CertificateRevocationListBuilder()
        .issuer_name(cert.subject)
        .last_update(now)
        .next_update(now + datetime.timedelta(days=1))
        .add_revoked_certificate(revoked)
        .sign(key, hashes.SHA256())
        .public_bytes(serialization.Encoding.DER)
    )
    (tmp_path / ZIP).write_bytes(SIGN.signed_zip(RUN, _run_bytes(), key, cert, crl))
    with pytest.raises(InputError, match="the root is revoked by the CRL"):
        signed.unwrap(tmp_path / ZIP, ZIP, Trust((TEST_CA / "ca.pem",), "the test"), Cache(tmp_path / "c"), "fix")


# -- through the CLI: lock refuses before anything slow -------------------------------------------------


MANIFEST = """\
schema: 1
name: demo
toolkit:
  vendor: cpusim
  version: 8.3.RC1
  chip: 910b
  trust: [ca/ca.pem]
  packages:
    toolkit:
      x86_64:
        file: {file}
        url: http://127.0.0.1:9/unreachable/{file}
        sha256: "{sha}"
host: {{driver: none}}
platform: {{os: debian, os_version: "12", python: "3.11", architectures: [x86_64]}}
base:
  image: debian@sha256:1111111111111111111111111111111111111111111111111111111111111111
components:
  - id: app
    source: {{path: app}}
smoke: {{command: "true", expect: ""}}
"""


def project(tmp_path: Path, data: bytes) -> tuple[Path, Path]:
    """(root, site config): stacks/demo.yaml pinning ZIP (as data), trusting the test CA; the site's
    installer directory holds it."""
    (tmp_path / "installers").mkdir()
    (tmp_path / "installers" / ZIP).write_bytes(data)
    root = tmp_path / "project"
    (root / "stacks" / "app").mkdir(parents=True)
    (root / "stacks" / "ca").mkdir()
    (root / "stacks" / "ca" / "ca.pem").write_bytes((TEST_CA / "ca.pem").read_bytes())
    sha = hashlib.sha256(data).hexdigest()
    (root / "stacks" / "demo.yaml").write_text(MANIFEST.format(file=ZIP, sha=sha))
    (tmp_path / "site.yaml").write_text(f"installer_dirs: [{tmp_path / 'installers'}]\n")
    return root, tmp_path / "site.yaml"


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))


def test_lock_takes_a_signed_zip_of_the_manifests_test_ca(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, site = project(tmp_path, good_zip())
    code, _, err = run_cli(capsys, "--root", str(root), "--site-config", str(site), "lock", "demo")
    assert code == 0, err
    locked = json.loads((root / "lockfiles" / "demo.lock.json").read_text())["architectures"]["x86_64"]["packages"]
    assert [p["file"] for p in locked] == [ZIP]


@pytest.mark.parametrize("shape", ["another-ca", "no-cms", "run-at-top"])
def test_lock_refuses_what_is_not_a_signed_zip_in_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    def bootstrapping(*args: object) -> None:
        raise AssertionError("a base was resolved before the package was checked")

    monkeypatch.setattr(lock_resolve, "_bases", bootstrapping)
    data, says = shapes(tmp_path)[shape]
    root, site = project(tmp_path, data)
    code, _, err = run_cli(capsys, "--root", str(root), "--site-config", str(site), "lock", "demo")
    assert code == 2, err
    errors = [line for line in err.splitlines() if line.startswith("stackbuild:")]
    assert len(errors) == 1 and f"stackbuild: error: {ZIP}: " in errors[0] and says in errors[0], err
    assert not (root / "lockfiles" / "demo.lock.json").exists()


def test_a_real_stack_names_no_test_ca(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, _ = project(tmp_path, good_zip())
    manifest = root / "stacks" / "demo.yaml"
    manifest.write_text(manifest.read_text().replace("vendor: cpusim", "vendor: huawei"))
    code, _, err = run_cli(capsys, "--root", str(root), "validate", str(manifest))
    assert code == 2 and "trust names test CAs, for vendor cpusim only" in err, err


# -- Huawei's installer code as the oracle -------------------------------------------------------------

# ascend-deployer 26.0.0's own zip handling, run as its installer runs it but with every path it would
# write or read on this host pointed into a temporary directory: importing ascend_deployer.jobs copies
# the package into $HOME/ascend-deployer, so HOME is temporary too. It calls ResourcePkg.handle_zip_pkg
# (which calls extract, _extract_filter_rule, verify_hmac, verify_cms, verify_crl, get_run_dir).
ORACLE = textwrap.dedent(
    """\
    import os, sys
    work, zip_file, ca = sys.argv[1:4]
    from ascend_deployer import jobs
    package = jobs.ResourcePkg()
    for name in ("handle_zip_pkg", "verify_hmac", "verify_cms", "verify_crl", "extract"):
        if not hasattr(package, name):
            sys.exit(f"ascend-deployer changed: ResourcePkg has no {name}: this test needs reading again")
    package.tmp_dir = os.path.join(work, "tmp")
    package.resource_path = os.path.join(work, "resources")
    package.root_ca = package.root_ca_g2 = ca
    package.sys_crl_file = os.path.join(work, "crl", "ascendsip.crl")
    package.sys_g2_crl_file = os.path.join(work, "crl", "ascendsip_g2.crl")
    package.ascend_cert = os.path.join(work, "no-ascend-cert")  # absent: openssl cms -verify is used
    package.handle_zip_pkg(zip_file)
    for root, _, files in os.walk(package.resource_path):
        for name in files:
            print(os.path.relpath(os.path.join(root, name), package.resource_path))
    """
)


def huawei_installer(tmp_path: Path, zip_file: Path) -> subprocess.CompletedProcess[str]:
    work = tmp_path / "ascend-deployer-home"
    work.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-c", ORACLE, str(work), str(zip_file), str(TEST_CA / "ca.pem")],
        env=dict(os.environ, HOME=str(work)),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_the_reference_packages_are_their_locked_bytes_and_huawei_installer_code_takes_them(
    tmp_path: Path, arch: str
) -> None:
    """Each reference package made again by its locked command is the locked file (the pin does not
    move), and ascend-deployer's own zip handling unwraps it and finds its .run."""
    locked = lock_io.read(ROOT / "lockfiles" / "reference.lock.json").section(Arch(arch)).packages
    cache = Cache(tmp_path / "cache")
    for package in locked:
        assert isinstance(package, LockedGenerated) and package.file.startswith("Ascend-cann-")
        made = packages.generate(package.command, package.file, ROOT / "stacks", cache)
        assert made == package.sha256, f"{package.file}: made {made}, the lock pins {package.sha256}"
        (tmp_path / package.file).write_bytes(cache.blob(made).read_bytes())
        (own := tmp_path / package.role).mkdir()
        taken = huawei_installer(own, tmp_path / package.file)
        assert taken.returncode == 0, taken.stderr[-2000:]
        assert taken.stdout.split() == [f"run_from_cann_zip/{package.file.removesuffix('.zip')}.run"]


@pytest.mark.parametrize("shape", ["another-ca", "run-at-top"])
def test_huawei_installer_code_refuses_what_stackbuild_refuses(tmp_path: Path, shape: str) -> None:
    data, _ = shapes(tmp_path)[shape]
    (tmp_path / ZIP).write_bytes(data)
    refused = huawei_installer(tmp_path, tmp_path / ZIP)
    assert refused.returncode != 0 and "run_from_cann_zip" not in refused.stdout, refused.stdout
    with pytest.raises(InputError):
        signed.unwrap(tmp_path / ZIP, ZIP, Trust((TEST_CA / "ca.pem",), "the test"), Cache(tmp_path / "c"), "fix")


def test_huawei_roots_come_from_the_installed_ascend_deployer() -> None:
    roots = catalog.huawei_roots()
    assert [r.name for r in roots] == list(catalog.HUAWEI_ROOTS) and all(r.is_file() for r in roots)
    assert not any((Path(__file__).parents[3] / "builder").rglob("*.pem"))  # never copied into this repository


# -- the real 8.5.0 stack's packages, locked from a directory holding a catalog-shaped test double ----


def test_lock_of_8_5_0_unwraps_and_verifies_a_catalog_zip_under_a_site_ca(tmp_path: Path) -> None:
    """The 8.5.0 manifest as shipped, its x86_64 toolkit pin moved to a test double (the reference .run
    under the real name, signed by the test CA): `lock`'s package step takes it from installer_dirs only
    with the test CA in the site's trusted_cas, and refuses it against Huawei's roots alone."""
    run_name = "Ascend-cann-toolkit_8.5.0_linux-x86_64.run"
    double = SIGN.signed_zip(run_name, _run_bytes(), *_test_ca())
    shelf = tmp_path / "cann"
    shelf.mkdir()
    (shelf / run_name.replace(".run", ".zip")).write_bytes(double)
    shipped = manifest.load(ROOT / "stacks" / "8.5.0.yaml")
    toolkit = shipped.toolkit.packages.toolkit[Arch.X86_64]
    assert isinstance(toolkit, DownloadPackage) and toolkit.file == run_name.replace(".run", ".zip")
    double_pin = toolkit.model_copy(update={"sha256": hashlib.sha256(double).hexdigest()})
    cache = Cache(tmp_path / "cache")

    def lock_with(site: SiteConfig) -> LockedPackage:
        return Resolver(ROOT / "stacks", site, cache, HttpClient(), print).package(
            "toolkit", double_pin, shipped.toolkit
        )

    with pytest.raises(InputError, match=r"its signature does not verify .*roots from ascend-deployer's Huawei roots"):
        lock_with(SiteConfig(installer_dirs=[shelf]))
    locked = lock_with(SiteConfig(installer_dirs=[shelf], trusted_cas=[TEST_CA / "ca.pem"]))
    assert locked.sha256 == double_pin.sha256 and locked.size == len(double)
    record = cache.records.read(signed.RECORDS, locked.sha256)
    assert record is not None and cache.blob(record["run"]).read_bytes() == _run_bytes()
