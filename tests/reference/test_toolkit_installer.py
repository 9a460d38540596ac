import hashlib
import os
import platform
import stat
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REFERENCE
from tests.reference.isolation import isolated

PACK = REFERENCE / "toolkit" / "pack.py"
DEVKIT_SOURCES = REFERENCE / "toolkit" / "payload" / "asc-devkit"
# The Ascend C devkit as the toolkit installs it: its header, and its library beside libascendcl.so.
DEVKIT = ("ascendc/include/ascendc/kernel_operator.h", "lib64/libascendc.so")
ARCH = platform.machine()
OTHER_ARCH = "aarch64" if ARCH == "x86_64" else "x86_64"


def pack(out: Path, *extra: str, arch: str = ARCH) -> Path:
    run = subprocess.run(
        ["python3", str(PACK), "--arch", arch, "--output-dir", str(out), *extra],
        capture_output=True,
        text=True,
        check=True,
    )
    path = Path(run.stdout.split()[0])
    assert run.stdout.split()[1] == "sha256=" + hashlib.sha256(path.read_bytes()).hexdigest()
    return path


@pytest.fixture(scope="module")
def installer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pack(tmp_path_factory.mktemp("dist"))


def run(installer: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(isolated(["bash", str(installer), *args]), input=stdin, capture_output=True, text=True)


def test_packing_is_deterministic(tmp_path: Path) -> None:
    first = pack(tmp_path / "a")
    second = pack(tmp_path / "b")
    assert first.name == f"cpusim-cann-toolkit_8.3.RC1_linux-{ARCH}.run"
    assert first.read_bytes() == second.read_bytes()
    other = pack(tmp_path / "c", "--version", "8.5.0")
    assert hashlib.sha256(other.read_bytes()).digest() != hashlib.sha256(first.read_bytes()).digest()


def test_real_file_names_can_be_packed(tmp_path: Path) -> None:
    path = pack(tmp_path, "--package-name", "Ascend-cann-toolkit", "--version", "8.3.RC1")
    assert path.name == f"Ascend-cann-toolkit_8.3.RC1_linux-{ARCH}.run"


def test_version_and_usage(installer: Path) -> None:
    assert run(installer, "--version").stdout.strip() == "8.3.RC1"
    nothing = run(installer)
    assert nothing.returncode == 1 and "nothing to do: pass --install, --full, --devel" in nothing.stderr
    bad = run(installer, "--install", "--bogus")
    assert bad.returncode == 1 and "Unrecognized flag : --bogus" in bad.stderr and "--whitelist=" in bad.stderr


# The toolkit .run's documented options (ascend-facts "The .run interface", hiascend instg_0042) and
# --whitelist=, which ascend-deployer passes to the 8.5.0+ toolkit (install_cann.py l.515).
DOCUMENTED = (
    "--help", "-h", "--info", "--list", "--check", "--version", "--quiet", "-q", "--nox11", "--install",
    "--install-path=", "--install-for-all", "--upgrade", "--uninstall", "--noexec", "--extract=", "--tar",
    "--devel", "--full", "--whitelist=",
)  # fmt: skip


def test_the_header_takes_the_documented_interface(installer: Path, tmp_path: Path) -> None:
    shown = run(installer, "--help")
    assert shown.returncode == 0 and all(option in shown.stdout for option in DOCUMENTED), shown.stdout
    assert "All good" in run(installer, "--check").stdout
    assert "install.sh" in run(installer, "--list").stdout.split()
    assert "Identification:" in run(installer, "--info").stdout
    assert run(installer, "--noexec", f"--extract={tmp_path / 'x'}").returncode == 0
    assert (tmp_path / "x" / "install.sh").is_file()
    listed = run(installer, "--tar", "-tzf", "-")
    assert listed.returncode == 0 and "package.info" in listed.stdout.split()
    damaged = tmp_path / installer.name
    data = bytearray(installer.read_bytes())
    data[-300] ^= 0xFF
    damaged.write_bytes(bytes(data))
    assert run(damaged, "--check").returncode == 1


def test_options_reach_the_script_behind_the_two_the_header_prepends(installer: Path, tmp_path: Path) -> None:
    for mode in ("--full", "--devel", "--install"):
        where = tmp_path / mode.strip("-")
        done = run(installer, mode, "--quiet", "--nox11", f"--install-path={where}")
        assert done.returncode == 0, done.stderr  # the script took none of the header's arguments for its own
        assert (where / "ascend-toolkit" / "8.3.RC1" / "lib64" / "libascendcl.so").is_file()
    again = run(installer, "--upgrade", "--quiet", f"--install-path={tmp_path / 'full'}")
    assert again.returncode == 0, again.stderr
    gone = run(installer, "--uninstall", f"--install-path={tmp_path / 'full'}")
    assert gone.returncode == 0 and not (tmp_path / "full" / "ascend-toolkit" / "8.3.RC1").exists()
    # Before 8.5 the runtime is its own nnrt package (ascend-deployer's CANN_8.3.RC1.json lists one).
    runtime_only = run(installer, "--install", "--quiet", "--whitelist=nnrt", f"--install-path={tmp_path / 'n'}")
    assert runtime_only.returncode == 1 and "ships the runtime as its own nnrt package" in runtime_only.stderr


def test_install_layout_and_version_files(installer: Path, tmp_path: Path) -> None:
    result = run(installer, "--full", "--quiet", f"--install-path={tmp_path}")
    assert result.returncode == 0, result.stderr
    root = tmp_path / "ascend-toolkit"
    home = root / "8.3.RC1"
    assert os.readlink(root / "latest") == "8.3.RC1"
    info = (home / f"{ARCH}-linux" / "ascend_toolkit_install.info").read_text().splitlines()
    assert info == [
        "package_name=cpusim-cann-toolkit",
        "version=8.3.RC1",
        "innerversion=8.3.RC1.cpusim",
        f"arch={ARCH}",
        "os=linux",
        f"path={home}",
    ]
    # No per-package records before 8.5: their place and format then are not known here (ascend-facts).
    assert not (home / "opp" / "version.info").exists() and not (home / "share").exists()
    compiler = "tools/ccec_compiler/bin/ascendcc"  # where CANN keeps bisheng: on PATH through set_env.sh only
    for rel in (compiler, "lib64/libascendcl.so", "lib64/cmake/ACLConfig.cmake", "devlib/libascend_hal.so", *DEVKIT):
        assert (home / rel).is_file(), rel
    env = subprocess.run(
        ["bash", "-c", f"source {root}/set_env.sh && echo $ASCEND_TOOLKIT_HOME && ascendcc --version"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert env[0] == f"{root}/latest"
    assert env[1].startswith("ascendcc 8.3.RC1 (CPU simulation")
    # Without --install-for-all other users get no access; with it, the group's bits without write.
    assert stat.S_IMODE((home / compiler).stat().st_mode) == 0o550
    assert stat.S_IMODE((root / "set_env.sh").stat().st_mode) == 0o440
    assert [stat.S_IMODE((home / rel).stat().st_mode) for rel in DEVKIT] == [0o440, 0o550]
    again = run(installer, "--install", "--quiet", "--install-for-all", f"--install-path={tmp_path}")
    assert again.returncode == 1 and "already installed" in again.stderr and "--force" in again.stderr
    forced = run(installer, "--install", "--quiet", "--install-for-all", "--force", f"--install-path={tmp_path}")
    assert forced.returncode == 0, forced.stderr
    assert stat.S_IMODE((home / compiler).stat().st_mode) == 0o555
    assert stat.S_IMODE(home.stat().st_mode) == 0o755
    assert [stat.S_IMODE((home / rel).stat().st_mode) for rel in DEVKIT] == [0o444, 0o555]
    assert stat.S_IMODE((home / "ascendc" / "include").stat().st_mode) == 0o755


def test_the_ascend_c_devkit_comes_inside_the_toolkit(installer: Path, tmp_path: Path) -> None:
    """CANN ships its Ascend C devkit (asc-devkit) inside the toolkit package, not as a package of its
    own: the package holds the devkit's sources, and the install puts its headers under ascendc/include
    and builds libascendc.so with the toolkit's ascendcc into lib64/, beside libascendcl.so (where
    asc-devkit's host libraries go, and what the runtime image copies)."""
    listed = set(run(installer, "--list").stdout.split())
    assert {"asc-devkit/install.sh", "asc-devkit/include/ascendc/kernel_operator.h", "asc-devkit/src/tile.c"} <= listed
    done = run(installer, "--install", "--quiet", f"--install-path={tmp_path}")
    assert done.returncode == 0, done.stderr
    home = tmp_path / "ascend-toolkit" / "8.3.RC1"
    header, library = (home / rel for rel in DEVKIT)
    assert header.read_bytes() == (DEVKIT_SOURCES / "include" / "ascendc" / "kernel_operator.h").read_bytes()
    exported = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True, check=True)
    assert {"ascendc_copy_in", "ascendc_copy_out", "ascendc_pipe_barrier"} <= set(exported.stdout.split())
    assert not (home / "asc-devkit").exists()  # the sources stay in the package


def test_license_prompt_without_quiet(installer: Path, tmp_path: Path) -> None:
    refused = run(installer, "--install", f"--install-path={tmp_path}", stdin="")
    assert refused.returncode == 1
    assert "license not accepted (pass --quiet to accept non-interactively)" in refused.stderr
    assert not (tmp_path / "ascend-toolkit" / "8.3.RC1").exists()
    accepted = run(installer, "--install", f"--install-path={tmp_path}", stdin="y\n")
    assert accepted.returncode == 0, accepted.stderr
    assert (tmp_path / "ascend-toolkit" / "8.3.RC1" / "lib64" / "libascendcl.so").is_file()


def test_wrong_architecture_and_relative_path(tmp_path: Path) -> None:
    foreign = pack(tmp_path, arch=OTHER_ARCH)
    result = run(foreign, "--install", "--quiet", f"--install-path={tmp_path}")
    assert result.returncode == 1
    assert f"this package is for {OTHER_ARCH} but this machine is {ARCH}" in result.stderr
    relative = run(pack(tmp_path / "native"), "--install", "--quiet", "--install-path=rel/dir")
    assert relative.returncode == 1 and "--install-path must be absolute" in relative.stderr


def test_truncated_package_is_reported(installer: Path, tmp_path: Path) -> None:
    broken = tmp_path / installer.name
    broken.write_bytes(installer.read_bytes()[:-200])
    result = run(broken, "--install", "--quiet", f"--install-path={tmp_path}")
    assert result.returncode == 1 and "corrupt or truncated" in result.stderr


def test_8_5_packages_install_the_new_layout(tmp_path: Path) -> None:
    """CANN 8.5.0 installs cann-<ver>/ with a `cann` link and cann/set_env.sh (the facts file),
    the layout builder.model.layout.toolkit_layout names for it."""
    from builder.model.layout import toolkit_layout

    installer = pack(tmp_path / "dist", "--package-name", "Ascend-cann-toolkit", "--version", "8.5.0")
    prefix = tmp_path / "Ascend"
    assert run(installer, "--full", "--quiet", f"--install-path={prefix}").returncode == 0
    layout = toolkit_layout("8.5.0")
    assert (prefix / "cann").is_symlink() and os.readlink(prefix / "cann") == layout.link_target == "cann-8.5.0"
    info = prefix / "cann" / f"{ARCH}-linux" / "ascend_toolkit_install.info"
    assert "version=8.5.0\n" in info.read_text() and "package_name=Ascend-cann-toolkit\n" in info.read_text()
    runtime_info = prefix / "cann-8.5.0" / "share" / "info" / "runtime" / "version.info"
    assert runtime_info.read_text().splitlines()[:2] == ["Version=8.5.0", "version_dir=cann"]
    assert os.readlink(prefix / "ascend-toolkit" / "latest") == "../cann"
    assert not (prefix / "ascend-toolkit" / "8.5.0").exists()
    assert all((prefix / "cann-8.5.0" / rel).is_file() for rel in DEVKIT)  # under ASCEND_HOME_PATH, as in 8.3
    for script in ("cann/set_env.sh", "ascend-toolkit/set_env.sh"):
        sourced = subprocess.run(
            ["bash", "-c", f"source {prefix}/{script} && echo $ASCEND_TOOLKIT_HOME && ascendcc --version"],
            capture_output=True,
            text=True,
        )
        assert sourced.returncode == 0, sourced.stderr
        # The install path rewritten into set_env.sh: the real directory, as CANN 8.5.0's is (hicann/runtime
        # scripts/package/runtime/scripts/runtime_custom_install.sh), and as the official image's ENV has it.
        assert sourced.stdout.splitlines()[0] == f"{prefix}/cann-8.5.0"


def _sourced(script: Path, *, env: dict[str, str], twice: bool = False) -> dict[str, str]:
    source = f"source {script} && " * (2 if twice else 1)
    run = subprocess.run(
        ["env", "-i", *(f"{k}={v}" for k, v in env.items()), "bash", "-c", source + "env -0"],
        capture_output=True,
        check=True,
    )
    return dict(item.split("=", 1) for item in run.stdout.decode().split("\0") if item)


def test_8_5_set_env_behaves_as_canns(tmp_path: Path) -> None:
    """What hicann/runtime's v8.5.0 set_env.sh does: the compiler, the CMake packages and devlib found
    only through it; devlib only without a driver; sourcing again drops its earlier entries."""
    installer = pack(tmp_path / "dist", "--version", "8.5.0")
    prefix = tmp_path / "Ascend"
    assert run(installer, "--full", "--quiet", "--install-for-all", f"--install-path={prefix}").returncode == 0
    home, script = prefix / "cann-8.5.0", prefix / "cann" / "set_env.sh"
    bare = {"PATH": "/usr/bin:/bin"}
    env = _sourced(script, env=bare)
    assert env["PATH"].split(":")[:2] == [f"{home}/bin", f"{home}/tools/ccec_compiler/bin"]
    assert env["CMAKE_PREFIX_PATH"] == f"{home}/lib64/cmake"
    assert env["LD_LIBRARY_PATH"].split(":")[0] == f"{home}/lib64"
    assert env["LD_LIBRARY_PATH"].split(":")[-1] == f"{home}/devlib"  # no driver: its stand-in, last
    assert env["PYTHONPATH"] == f"{home}/python/site-packages:"  # CANN's trailing colon
    assert env["TOOLCHAIN_HOME"] == f"{home}/toolkit" and env["ASCEND_OPP_PATH"] == f"{home}/opp"
    again = _sourced(script, env=bare, twice=True)
    # Its own entries once (the driver's are put in front again, as CANN's set_env.sh does too).
    assert again["PATH"] == env["PATH"]
    own = [p for p in again["LD_LIBRARY_PATH"].split(":") if p.startswith(str(home))]
    assert own == [p for p in env["LD_LIBRARY_PATH"].split(":") if p.startswith(str(home))]
    driver = tmp_path / "driver" / "lib64"
    driver.mkdir(parents=True)
    (driver / "libascend_hal.so").write_bytes(b"")
    with_driver = _sourced(script, env={**bare, "LD_LIBRARY_PATH": str(driver)})
    assert f"{home}/devlib" not in with_driver["LD_LIBRARY_PATH"].split(":")
    assert with_driver["LD_LIBRARY_PATH"].endswith(f":{driver}")


def test_the_ops_package_installs_into_the_toolkits_tree_and_never_without_it(installer: Path, tmp_path: Path) -> None:
    ops = pack(tmp_path / "ops", "--kind", "ops")
    assert ops.name == f"cpusim-cann-910b-ops_8.3.RC1_linux-{ARCH}.run"
    alone = run(ops, "--install", "--quiet", f"--install-path={tmp_path}")
    assert alone.returncode == 1 and "install the toolkit 8.3.RC1 into" in alone.stderr
    assert run(installer, "--install", "--quiet", f"--install-path={tmp_path}").returncode == 0
    done = run(ops, "--install", "--quiet", "--install-for-all", f"--install-path={tmp_path}")
    assert done.returncode == 0, done.stderr
    info = tmp_path / "ascend-toolkit" / "8.3.RC1" / "opp" / "built-in" / "op_impl" / "ai_core" / "tbe" / "config"
    assert (info / "ascend910b" / "aic-ascend910b-ops-info.json").is_file()
