"""tests/debrepo.py makes a repository the host's real apt accepts and resolves from."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.debrepo import make_deb, serve, write_index

pytestmark = pytest.mark.skipif(
    not (shutil.which("apt-get") and shutil.which("dpkg-deb")), reason="needs apt-get and dpkg-deb (a Debian host)"
)


def private_apt(root: Path, sources: str) -> tuple[list[str], dict[str, str]]:
    """apt-get in a private root (chdist-style), so the host's apt state is neither read nor written.

    The option set proven with apt 2.6.1 (Debian 12), as root; "needed" means dropping it fails or warns:
      -o Dir=<root>                                everything else relative (etc/apt, var/lib/apt, ...) under it
      -o Dir::State=<root>/state                   needed: writable, lists/partial must exist beforehand
      -o Dir::State::status=<root>/status          an empty dpkg status (else the host's installed set counts)
      -o Dir::Cache=<root>/cache                   writable, archives/partial made beforehand
      -o Dir::Etc::SourceList=<root>/sources.list  needed: deb [trusted=yes] <url> <suite> <component>
      -o Dir::Etc::SourceParts=/dev/null           no host sources.list.d
      -o Dir::Etc::Parts=/dev/null                 kept as chdist has it, but on the command line it comes too late:
                                                   apt reads apt.conf.d before parsing -o, hence APT_CONFIG below
      -o Dir::Etc::Preferences=/dev/null           no host pinning
      -o Dir::Etc::PreferencesParts=/dev/null      needed: else "W: Unable to read <root>/etc/apt/preferences.d/"
      -o Dir::Etc::Trusted=/dev/null -o Dir::Etc::TrustedParts=/dev/null   no host keys (trusted=yes)
      -o Debug::NoLocking=1                        no lock files taken
      -o APT::Architecture=amd64 -o APT::Architectures=amd64   ignore the host dpkg's foreign architectures
      -o APT::Sandbox::User=root                   needed as root: else "W: Download is performed unsandboxed"
                                                   (the _apt user cannot enter pytest's 0700 tmp dirs)
    plus, in the environment, APT_CONFIG=<root>/apt.conf holding
      Dir::Etc::Parts "/dev/null"; Dir::Etc::Main "/dev/null";
    which apt reads first, so the host's apt.conf(.d) (e.g. Acquire::Check-Valid-Until "false",
    Acquire::GzipIndexes) stays out; and LC_ALL=C for stable messages.
    """
    for sub in ("state/lists/partial", "cache/archives/partial"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "status").write_text("")
    (root / "sources.list").write_text(sources)
    (root / "apt.conf").write_text('Dir::Etc::Parts "/dev/null";\nDir::Etc::Main "/dev/null";\n')
    options = {
        "Dir": root,
        "Dir::State": root / "state",
        "Dir::State::status": root / "status",
        "Dir::Cache": root / "cache",
        "Dir::Etc::SourceList": root / "sources.list",
        "Dir::Etc::SourceParts": "/dev/null",
        "Dir::Etc::Parts": "/dev/null",
        "Dir::Etc::Preferences": "/dev/null",
        "Dir::Etc::PreferencesParts": "/dev/null",
        "Dir::Etc::Trusted": "/dev/null",
        "Dir::Etc::TrustedParts": "/dev/null",
        "Debug::NoLocking": "1",
        "APT::Architecture": "amd64",
        "APT::Architectures": "amd64",
        "APT::Sandbox::User": "root",
    }
    argv = ["apt-get", "-q"]
    for key, value in options.items():
        argv += ["-o", f"{key}={value}"]
    return argv, dict(os.environ, APT_CONFIG=str(root / "apt.conf"), LC_ALL="C")


def test_host_apt_resolves_from_the_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    pool = repo / "pool" / "main"
    make_deb(pool, "sbdemo-lib", "1.0", files={"usr/share/doc/sbdemo-lib/hello": "lib\n"})
    make_deb(
        pool,
        "sbdemo-tool",
        "1.0",
        arch="amd64",
        depends=["sbdemo-lib (>= 1.0)"],
        files={"usr/share/doc/sbdemo-tool/hello": "tool\n"},
    )
    write_index(repo)
    arm64 = (repo / "dists/stable/main/binary-arm64/Packages").read_text()
    assert "Package: sbdemo-lib" in arm64 and "sbdemo-tool" not in arm64
    with serve(repo) as url:
        apt, env = private_apt(tmp_path / "apt", f"deb [trusted=yes] {url} stable main\n")
        update = subprocess.run([*apt, "update"], env=env, capture_output=True, text=True, timeout=60)
        assert update.returncode == 0, update.stdout + update.stderr
        assert "W:" not in update.stdout + update.stderr, update.stdout + update.stderr
        install = subprocess.run(
            [*apt, "install", "-s", "sbdemo-tool"], env=env, capture_output=True, text=True, timeout=60
        )
    assert install.returncode == 0, install.stdout + install.stderr
    assert "Inst sbdemo-lib (1.0" in install.stdout and "Inst sbdemo-tool (1.0" in install.stdout, install.stdout


def test_debs_and_index_are_reproducible(tmp_path: Path) -> None:
    built = []
    for run in ("a", "b"):
        repo = tmp_path / run
        deb = make_deb(repo / "pool", "sbdemo-lib", "1:1.0", depends=["libc6"], files={"etc/sbdemo": "x\n"})
        assert deb.name == "sbdemo-lib_1.0_all.deb"
        write_index(repo)
        built.append((deb.read_bytes(), (repo / "dists/stable/Release").read_bytes()))
    assert built[0] == built[1]
    # Re-indexing after removing a deb drops it.
    deb.unlink()
    write_index(tmp_path / "b")
    assert (tmp_path / "b/dists/stable/main/binary-amd64/Packages").read_text() == ""
