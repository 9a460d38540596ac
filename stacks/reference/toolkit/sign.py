#!/usr/bin/env python3
"""Wrap a .run into a catalog-shaped signed zip, as Huawei ships CANN's packages (test material).

Huawei's catalog zips (ascend-deployer's CANN_<ver>.json) are signed wrappers: the outer
`<name>.zip` holds the inner `<name>.zip` (which holds `<name>.run`), its detached CMS signature
`<name>.zip.cms` (DER) and a CRL `<name>.zip.crl` (ascend-deployer `jobs.py` handle_zip_pkg,
`install.sh` verify_zip). This script makes that shape with the reference stack's TEST CA
(test-ca/, never trusted for vendor huawei), so stackbuild and Huawei's own installer code can be
run against it. The bytes are the same on every run: zip members dated 1980-01-01 with fixed
modes, and a PKCS#7 signature with no signed attributes (no signing time; RSA PKCS#1 v1.5 is
deterministic), where `openssl cms -sign` would record the time and move every pin.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import sys
import zipfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs7

HERE = Path(__file__).resolve().parent
TEST_CA = HERE / "test-ca"
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest date a zip header holds


def _zip(members: list[tuple[str, bytes, int]]) -> bytes:
    out = io.BytesIO()
    # Stored, not deflated: another zlib could deflate the same bytes differently (the .run is gzip'd).
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, data, mode in members:
            info = zipfile.ZipInfo(name, ZIP_EPOCH)
            info.external_attr = (0o100000 | mode) << 16
            archive.writestr(info, data)
    return out.getvalue()


def signed_zip(run_name: str, run: bytes, key: rsa.RSAPrivateKey, cert: x509.Certificate, crl: bytes) -> bytes:
    """The outer zip for run (named run_name): inner zip, its detached signature and the CRL."""
    name = run_name.removesuffix(".run")
    inner = _zip([(run_name, run, 0o755)])
    options = [pkcs7.PKCS7Options.DetachedSignature, pkcs7.PKCS7Options.Binary, pkcs7.PKCS7Options.NoAttributes]
    builder = pkcs7.PKCS7SignatureBuilder().set_data(inner).add_signer(cert, key, hashes.SHA256())
    signature = builder.sign(serialization.Encoding.DER, options)
    return _zip([(f"{name}.zip", inner, 0o644), (f"{name}.zip.cms", signature, 0o644), (f"{name}.zip.crl", crl, 0o644)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Wrap a .run into a catalog-shaped zip signed by a TEST CA (not Huawei's).",
        epilog="example: sign.py --run out/Ascend-cann-toolkit_8.5.0_linux-x86_64.run --output-dir out",
    )
    parser.add_argument("--run", type=Path, required=True, help="the installer to wrap (its name names the zip)")
    parser.add_argument("--ca", type=Path, default=TEST_CA, help="directory with ca.key, ca.pem, ca.crl")
    parser.add_argument("--output-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    key = serialization.load_pem_private_key((args.ca / "ca.key").read_bytes(), password=None)
    if not isinstance(key, rsa.RSAPrivateKey):
        parser.error(f"{args.ca / 'ca.key'}: an RSA key is needed (its signatures are deterministic)")
    cert = x509.load_pem_x509_certificate((args.ca / "ca.pem").read_bytes())
    data = signed_zip(args.run.name, args.run.read_bytes(), key, cert, (args.ca / "ca.crl").read_bytes())
    out = args.output_dir / (args.run.name.removesuffix(".run") + ".zip")
    args.output_dir.mkdir(parents=True, exist_ok=True)
    part = out.with_name(out.name + ".part")
    part.write_bytes(data)
    part.replace(out)
    print(f"{out} sha256={hashlib.sha256(data).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
