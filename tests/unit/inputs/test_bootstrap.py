"""Bootstrapped bases without running mmdebstrap: the command a spec gives, where its keyring comes
from, and what their keys cover (the lock's, and the cache's records)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from builder import manifest
from builder.inputs import bootstrap
from builder.inputs.bootstrap_base import BootstrapBase
from builder.manifest.bases import Bootstrap
from builder.model.arch import Arch
from builder.model.errors import InputError, StackbuildError
from builder.store.cache import Cache

ROOT = Path(__file__).resolve().parents[3]
UBUNTU = Bootstrap(
    suite="jammy",
    mirror="http://archive.ubuntu.com/ubuntu",
    mirrors={Arch.AARCH64: "http://ports.ubuntu.com/ubuntu-ports"},
    components=["main", "universe"],
    keyring="ubuntu-keyring-2018-archive.gpg",
)


def test_an_ubuntu_base_on_arm_uses_the_ports_mirror_its_components_and_keeps_its_key(tmp_path: Path) -> None:
    keyfile = tmp_path / "ubuntu-keyring-2018-archive.gpg"
    command = bootstrap._command(
        UBUNTU, Arch.AARCH64, "devel", tmp_path / "out.tar", UBUNTU.mirror_for(Arch.AARCH64), keyfile
    )
    assert "--architectures=arm64" in command and "--components=main,universe" in command
    assert f"--keyring={keyfile}" in command
    assert f"--customize-hook=copy-in {keyfile} /etc/apt/trusted.gpg.d/" in command
    assert command[-4:] == ["--", "jammy", str(tmp_path / "out.tar"), "http://ports.ubuntu.com/ubuntu-ports"]
    assert UBUNTU.mirror_for(Arch.X86_64) == "http://archive.ubuntu.com/ubuntu"


def test_the_keyring_next_to_the_manifest_wins_over_the_shipped_one(tmp_path: Path) -> None:
    shipped = bootstrap.keyring(UBUNTU, tmp_path)
    assert shipped is not None
    assert shipped.data == (ROOT / "builder/inputs/keyrings/ubuntu-keyring-2018-archive.gpg").read_bytes()
    (tmp_path / UBUNTU.keyring).write_bytes(b"a site's own key")  # type: ignore[operator]
    assert bootstrap.keyring(UBUNTU, tmp_path) == bootstrap.Keyring(UBUNTU.keyring, b"a site's own key")  # type: ignore[arg-type]
    keys = [bootstrap.spec_key(UBUNTU, Arch.X86_64, "devel", k) for k in (shipped, bootstrap.keyring(UBUNTU, tmp_path))]
    assert keys[0] != keys[1]  # another key is another base
    missing = UBUNTU.model_copy(update={"keyring": "nowhere.gpg"})
    with pytest.raises(InputError, match=r"base.bootstrap.keyring: no file nowhere.gpg next to the manifest .*"):
        bootstrap.keyring(missing, tmp_path)
    assert bootstrap.keyring(UBUNTU.model_copy(update={"keyring": None}), tmp_path) is None


@pytest.mark.skipif(shutil.which("gpg") is None, reason="needs gpg to read the key's fingerprint")
def test_the_shipped_ubuntu_key_is_the_ubuntu_archive_signing_key_2018(tmp_path: Path) -> None:
    listing = subprocess.run(
        [
            "gpg",
            "--homedir",
            str(tmp_path),
            "--show-keys",
            "--with-colons",
            str(bootstrap.SHIPPED_KEYRINGS / "ubuntu-keyring-2018-archive.gpg"),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    fingerprints = [line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:")]
    assert fingerprints == ["F6ECB3762474EDA9D21B7022871920D1991BC93C"]  # published by Ubuntu (ftpmaster)


def test_the_locks_name_their_tarballs_by_the_spec_key_the_code_gives() -> None:
    """A lock keeps its tarballs across relocks while their spec key is the code's: a lock whose keys
    the code no longer gives bootstraps again (or, with the mirror unreachable, leaves its base unresolved)."""
    for stack in ("reference", "reference-8.3", "8.5.0"):
        spec = manifest.load(ROOT / "stacks" / f"{stack}.yaml").base
        assert isinstance(spec, BootstrapBase)
        keys = bootstrap.keyring(spec.bootstrap, ROOT / "stacks")
        lock = json.loads((ROOT / "lockfiles" / f"{stack}.lock.json").read_text())
        for arch, section in lock["architectures"].items():
            for flavor, tarball in section["base"].items():
                expected = bootstrap.spec_key(spec.bootstrap, Arch(arch), flavor, keys)
                assert expected == tarball["spec_key"], (stack, arch, flavor)


def test_the_host_files_are_emptied_before_the_keyring_goes_in_and_every_option_is_in_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hooks that replace the host's resolv.conf and hostname, exactly (a quoting slip here would
    leave the host's files in, or fail the bootstrap); a change to any fixed option, one to the
    manifest's mirror, or the keyring's bytes makes another spec key, so no record of other bytes is
    reused. A site rewrite of the mirror is in the cache record's key, never in the lock's spec key."""
    keyfile = tmp_path / "ubuntu-keyring-2018-archive.gpg"
    command = bootstrap._command(UBUNTU, Arch.X86_64, "devel", tmp_path / "out.tar", UBUNTU.mirror, keyfile)
    hooks = [part for part in command if part.startswith("--customize-hook=")]
    assert hooks == [
        '--customize-hook=rm -rf "$1"/var/lib/apt/lists/*',
        '--customize-hook=rm -f "$1"/etc/resolv.conf && : > "$1"/etc/resolv.conf && chmod 0644 "$1"/etc/resolv.conf',
        '--customize-hook=rm -f "$1"/etc/hostname && : > "$1"/etc/hostname && chmod 0644 "$1"/etc/hostname',
        f"--customize-hook=copy-in {keyfile} /etc/apt/trusted.gpg.d/",
    ]
    keys = bootstrap.keyring(UBUNTU, tmp_path)
    key = bootstrap.spec_key(UBUNTU, Arch.X86_64, "devel", keys)
    other_mirror = UBUNTU.model_copy(update={"mirror": "http://mirror.example/ubuntu"})
    assert bootstrap.spec_key(other_mirror, Arch.X86_64, "devel", keys) != key
    assert bootstrap.spec_key(UBUNTU, Arch.X86_64, "devel", bootstrap.Keyring(UBUNTU.keyring or "", b"x")) != key
    monkeypatch.setattr(bootstrap, "HOST_FILES", bootstrap.HOST_FILES[:1])  # one hook fewer: other bytes
    assert bootstrap.spec_key(UBUNTU, Arch.X86_64, "devel", keys) != key
    records = {bootstrap.record_key(UBUNTU, Arch.X86_64, "devel", keys, m) for m in (UBUNTU.mirror, "http://local/u")}
    assert len(records) == 2


def test_bootstrap_progress_shows_phases_and_package_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    clock = iter([0.0, 1.0, 2.0, 4.0, 5.0])
    monkeypatch.setattr("builder.inputs.bootstrap.time.monotonic", lambda: next(clock))
    progress = bootstrap._Progress("base x86_64 devel", said.append)
    for line in [
        "I: downloading packages with apt...",
        "Get:1 http://deb.debian.org/debian bookworm/main amd64 libc6 amd64 2.36-9 [2757 kB]",
        "Get:2 http://deb.debian.org/debian bookworm/main amd64 bash amd64 5.2.15-2 [1491 kB]",
        "Setting up libc6:amd64 (2.36-9) ...",
    ]:
        progress.line(line)
    assert said == [
        "  base x86_64 devel: downloading packages with apt...",
        "  base x86_64 devel: 2 packages fetched, 0 set up",
    ]
    assert progress.tail[-1] == "Setting up libc6:amd64 (2.36-9) ..."  # kept for the error message


def test_a_foreign_architecture_without_emulation_names_the_setup_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    foreign = Arch.AARCH64 if Arch.host() == Arch.X86_64 else Arch.X86_64
    monkeypatch.setattr(bootstrap, "emulated", lambda arch: False)
    monkeypatch.setattr("builder.inputs.bootstrap.shutil.which", lambda name: f"/usr/bin/{name}")
    with pytest.raises(StackbuildError) as refused:
        bootstrap.bootstrap(UBUNTU, foreign, "devel", None, Cache(tmp_path), UBUNTU.mirror, lambda _: None)
    assert f"run `python -m builder.hostsetup --foreign {foreign}` (as root)" in str(refused.value)


def test_host_setup_mounts_binfmt_misc_and_checks_emulation(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from builder import hostsetup

    ran: list[list[str]] = []
    monkeypatch.setattr(hostsetup, "ensure_commands", lambda tools: None)
    monkeypatch.setattr(hostsetup, "BINFMT", tmp_path / "binfmt_misc")  # not mounted: no status file
    monkeypatch.setattr("builder.hostsetup.os.geteuid", lambda: 0)

    def run(cmd: list[str], **_: object) -> subprocess.CompletedProcess[bytes]:
        ran.append(cmd)
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr("builder.hostsetup.subprocess.run", run)
    hostsetup.ensure_foreign("aarch64")
    assert ran == [
        ["mount", "-t", "binfmt_misc", "binfmt_misc", str(tmp_path / "binfmt_misc")],
        ["update-binfmts", "--enable", "qemu-aarch64"],  # that one alone: BuildKit runs each enabled one per build
        ["arch-test", "arm64"],
    ]
    ran.clear()  # mounted, the handler enabled: nothing to do but the check
    (tmp_path / "binfmt_misc").mkdir()
    (tmp_path / "binfmt_misc" / "status").write_text("enabled")
    (tmp_path / "binfmt_misc" / "qemu-aarch64").write_text("enabled")
    hostsetup.ensure_foreign("aarch64")
    assert ran == [["arch-test", "arm64"]]
    (tmp_path / "binfmt_misc" / "qemu-aarch64").write_text("disabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64\n")
    hostsetup.ensure_foreign("aarch64")  # registered but switched off: switched on, as the kernel takes it
    assert (tmp_path / "binfmt_misc" / "qemu-aarch64").read_text() == "1"
    assert ran == [["arch-test", "arm64"]] * 2
    (tmp_path / "binfmt_misc" / "qemu-aarch64").unlink()
    monkeypatch.setattr("builder.hostsetup.subprocess.run", lambda cmd, **_: subprocess.CompletedProcess(cmd, 1))
    with pytest.raises(hostsetup.SetupError, match="aarch64 binaries do not run here"):
        hostsetup.ensure_foreign("aarch64")
