"""The reference toolkit's installed tree as CANN 8.5 writes it, with Huawei's installer code as the judge.

ascend-deployer 26.0.0 (the wheel this project depends on) installs the reference packages itself: its
CANNInstaller (library/install_cann.py) picks the flags (`--whitelist=nnrt` for a runtime-only install,
l.485-516), runs the .run files and checks the ops package's toolkit; its process_test.py then reports
what is installed. Its code reads fixed paths (/usr/local/Ascend, /etc, /var/log), so each install runs
in a private mount namespace with /usr/local, /etc and /var/log overlaid by temporary directories: the
host's own are never written.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import shlex
import shutil
import stat
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REFERENCE
from tests.reference.isolation import isolated

PACK = REFERENCE / "toolkit" / "pack.py"
ARCH = platform.machine()
AD = Path(str(getattr(importlib.util.find_spec("ascend_deployer"), "origin", ""))).parent
VERSION = "8.5.0"

# The toolkit's parts with records of their own, each record's key prefix and where it is seen.
PARTS = {
    "runtime": ("Runtime", "hicann/runtime v8.5.0 scripts/package/runtime/scripts/install.sh l.567, l.1172-1176"),
    "asc-devkit": ("Asc-Devkit", "hicann/asc-devkit v8.5.0 scripts/package/scripts/install.sh l.578, l.1160"),
}
INSTALL_INFO_FIELDS = (
    "Install_Type", "Chip_Type", "Feature_Type", "UserName", "UserGroup", "Install_Path_Param", "Arch_Linux_Path",
    "Hetero_Arch_Flag",
)  # fmt: skip
# Every version or install-record file the reference toolkit and ops packages write, with each field and
# where CANN is seen writing it (ascend-facts "Installed tree"). Paths relative to /.
RECORDS: dict[str, tuple[tuple[str, ...], str]] = {
    f"usr/local/Ascend/cann-{VERSION}/{ARCH}-linux/ascend_toolkit_install.info": (
        ("package_name", "version", "innerversion", "arch", "os", "path"),
        "ascend-facts 'Version files'; ascend-deployer install_cann.py l.150-156 finds the toolkit by it",
    ),
    f"usr/local/Ascend/cann-{VERSION}/{ARCH}-linux/install.conf": (
        ("whitelist",),
        "ascend-deployer cann_checks.py l.119-134, process_test.py l.424-436 read whitelist= from it",
    ),
    **{
        f"usr/local/Ascend/cann-{VERSION}/share/info/{part}/version.info": (
            ("Version", "version_dir", "timestamp"),
            "hicann/runtime v8.5.0 version.info; scripts/update_version_info/update_version_info.sh l.28-44",
        )
        for part in PARTS
    },
    **{
        f"usr/local/Ascend/cann-{VERSION}/share/info/{part}/ascend_install.info": (
            tuple(f"{key}_{field}" for field in INSTALL_INFO_FIELDS),
            f"{source} (hicann/runtime v8.5.0 scripts/package/runtime/scripts/install.sh l.559-631 the order)",
        )
        for part, (key, source) in PARTS.items()
    },
    "etc/Ascend/ascend_cann_install.info": (
        ("Install_Path", "Toolkit_InstallPath"),
        "ascend-facts 'Installed tree' (read by sgl-kernel-npu's build.sh)",
    ),
}
# hicann/runtime v8.5.0 install.sh l.94-95 (chmod_end), with the others' bits --install-for-all (which
# ascend-deployer always passes) adds: the group's without write (common_func_v2.inc, get_install_for_all_mod).
MODES = {
    f"usr/local/Ascend/cann-{VERSION}/share/info/runtime/version.info": 0o444,
    f"usr/local/Ascend/cann-{VERSION}/share/info/runtime/ascend_install.info": 0o644,
}


def _is_record(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return base.endswith(".info") or base == "install.conf"


# The Ansible modules import ansible.module_utils.<name>: that is the wheel's own module_utils but for
# three names that are Ansible's (AnsibleModule, fetch_url, to_text), stood in for here; AnsibleModule's
# exit and fail end the run with what the module reported.
STUBS = {
    "basic.py": textwrap.dedent(
        """\
        import json, os
        class AnsibleModule:
            def __init__(self, argument_spec, **kwargs):
                given = json.loads(os.environ["ORACLE_PARAMS"])
                self.params = {k: given.get(k, spec.get("default")) for k, spec in argument_spec.items()}
            def exit_json(self, **result):
                raise SystemExit(json.dumps({"ok": True, **{k: str(v) for k, v in result.items()}}))
            def fail_json(self, **result):
                raise SystemExit(json.dumps({"ok": False, **{k: str(v) for k, v in result.items()}}))
        """
    ),
    "urls.py": "def fetch_url(*args, **kwargs):\n    raise NotImplementedError('no downloads here')\n",
    "_text.py": "def to_text(value, *args, **kwargs):\n    return value if isinstance(value, str) else value.decode()\n",  # noqa: E501
}
ORACLE = textwrap.dedent(
    """\
    import json, os, sys
    stubs, module_utils, library = sys.argv[1:4]
    import types
    ansible = types.ModuleType("ansible"); ansible.__path__ = []
    utils = types.ModuleType("ansible.module_utils"); utils.__path__ = [stubs, module_utils]
    sys.modules.update({"ansible": ansible, "ansible.module_utils": utils})
    sys.path.insert(0, library)
    if sys.argv[4] == "install":
        import install_cann
        install_cann.CANNInstaller().run()
    else:
        import process_test
        installer = object.__new__(__import__("install_cann").CANNInstaller)
        installer.ascend_install_path, installer.cann_tags = "/usr/local/Ascend", ["toolkit", "nnae", "nnrt"]
        installer.pkg_name = "toolkit"
        print(json.dumps({
            "whitelist": process_test._get_whitelist_conf(),
            "versions": {p: process_test._get_new_cann_version(p) for p in ("ascend-toolkit", "nnae", "nnrt")},
            "toolkit_installed": installer.pkg_installed(),
        }))
    """
)


def _pack(out: Path, kind: str, name: str) -> Path:
    run = subprocess.run(
        [sys.executable, str(PACK), "--kind", kind, "--arch", ARCH, "--version", VERSION, "--package-name", name,
         "--output-dir", str(out)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return Path(run.stdout.split()[0])


@pytest.fixture(scope="module")
def resources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ascend-deployer's resources directory holding the packages as its zip handling leaves them."""
    root = tmp_path_factory.mktemp("resources")
    runs = root / "run_from_cann_zip"
    _pack(runs, "toolkit", "Ascend-cann-toolkit")
    _pack(runs, "ops", "Ascend-cann-910b-ops")
    stubs = root / "stubs"
    stubs.mkdir()
    for name, text in STUBS.items():
        (stubs / name).write_text(text)
    return root


def _in_namespace(tmp: Path, steps: list[list[str]], env: dict[str, str]) -> list[subprocess.CompletedProcess[str]]:
    """Run each step in one private mount namespace, /usr/local, /etc and /var/log overlaid by directories
    under tmp; the installed files are left in tmp/tree.tar."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare: ascend-deployer's installer code writes /usr/local, /etc, /var/log")
    results = tmp / "results"
    results.mkdir()
    script = [
        f"{shlex.join(step)} > {results}/{n}.out 2> {results}/{n}.err; echo $? > {results}/{n}.rc"
        for n, step in enumerate(steps)
    ]
    script.append(f"tar -C / -cf {tmp}/tree.tar usr/local/Ascend etc/Ascend var/log/ascend_seclog 2>/dev/null || true")
    command = isolated(["bash", "-uc", "\n".join(script)], tmp / "overlays", ("/usr/local", "/etc", "/var/log"))
    done = subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True)
    assert done.returncode == 0, f"overlay mounts or the steps failed: {done.stderr[-500:]}"
    return [
        subprocess.CompletedProcess(
            step,
            int((results / f"{n}.rc").read_text()),
            (results / f"{n}.out").read_text(),
            (results / f"{n}.err").read_text(),
        )
        for n, step in enumerate(steps)
    ]


def _huawei_installs(tmp: Path, resources: Path, run_tags: list[str]) -> tuple[dict[str, object], tarfile.TarFile]:
    """ascend-deployer installs the toolkit (pkg toolkit or nnrt, as its playbooks name the task) and then
    the ops package (pkg kernels), then reports what is installed."""
    oracle = [sys.executable, "-c", ORACLE, str(resources / "stubs"), str(AD / "module_utils"), str(AD / "library")]
    params = {
        "python_version": "python3", "run_tags": run_tags, "resources_dir": str(resources),
        "npu_info": {"scene": "a910b"}, "log_file_name": "ascend_toolkit_install.log",
    }  # fmt: skip
    steps = [
        ["env", f"ORACLE_PARAMS={json.dumps({**params, 'pkg_name': run_tags[0]})}", *oracle, "install"],
        ["env", f"ORACLE_PARAMS={json.dumps({**params, 'pkg_name': 'kernels'})}", *oracle, "install"],
        [*oracle, "report"],
    ]
    toolkit, ops, report = _in_namespace(tmp, steps, {"HOME": str(tmp)})
    for done in (toolkit, ops):
        assert json.loads(done.stderr.strip().splitlines()[-1])["ok"] is True, done.stderr[-2000:]
    return json.loads(report.stdout), tarfile.open(tmp / "tree.tar")


def _fields(tree: tarfile.TarFile, name: str) -> list[str]:
    member = tree.extractfile(name)
    assert member is not None, name
    return [line.split("=", 1)[0] for line in member.read().decode().splitlines()]


def test_huawei_installer_installs_the_full_toolkit_and_finds_it(tmp_path: Path, resources: Path) -> None:
    report, tree = _huawei_installs(tmp_path, resources, ["toolkit"])
    assert report == {
        "whitelist": "no",
        "versions": {"ascend-toolkit": VERSION, "nnae": VERSION, "nnrt": VERSION},
        "toolkit_installed": True,
    }
    names = {m.name: m for m in tree.getmembers()}
    records = sorted(n for n in names if _is_record(n))
    assert records == sorted(RECORDS), "a version or install-record file CANN is not seen writing, or one missing"
    for name, (fields, source) in RECORDS.items():
        assert _fields(tree, name) == list(fields), f"{name}: fields as {source}"
    for name, mode in MODES.items():
        assert stat.S_IMODE(names[name].mode) == mode, name
    info = tree.extractfile(f"usr/local/Ascend/cann-{VERSION}/share/info/runtime/version.info")
    assert info is not None and info.read().decode().splitlines()[:2] == [f"Version={VERSION}", "version_dir=cann"]
    # The link chain (ascend-facts "Installed tree", inferred) and the AICPU package's path.
    assert names["usr/local/Ascend/cann"].linkname == f"cann-{VERSION}"
    assert names["usr/local/Ascend/ascend-toolkit/latest"].linkname == "../cann"
    assert names["usr/local/Ascend/ascend-toolkit/set_env.sh"].linkname == "latest/set_env.sh"
    assert f"usr/local/Ascend/cann-{VERSION}/opp/Ascend/aicpu/Ascend-aicpu_syskernels.tar.gz" in names
    assert f"usr/local/Ascend/cann-{VERSION}/tools/ccec_compiler/bin/ascendcc" in names
    assert "var/log/ascend_seclog/ascend_toolkit_install.log" in names


def test_huawei_installer_makes_a_runtime_only_install_with_the_whitelist(tmp_path: Path, resources: Path) -> None:
    """With only nnrt asked for, ascend-deployer passes --whitelist=nnrt (install_cann.py l.485-516); the
    result is what it then reports as nnrt only (process_test.py l.395-414): no compiler, no headers."""
    report, tree = _huawei_installs(tmp_path, resources, ["nnrt"])
    assert report == {
        "whitelist": "nnrt",
        "versions": {"ascend-toolkit": "", "nnae": "", "nnrt": VERSION},
        "toolkit_installed": True,
    }
    names = {m.name for m in tree.getmembers()}
    home = f"usr/local/Ascend/cann-{VERSION}"
    # Its records: the runtime's only (the devkit's library is there, not the devkit).
    assert sorted(n for n in names if _is_record(n)) == sorted(r for r in RECORDS if "/asc-devkit/" not in r)
    assert f"{home}/lib64/libascendc.so" in names and f"{home}/ascendc/include/ascendc/kernel_operator.h" not in names
    for kept in ("lib64/libascendcl.so", "set_env.sh", "opp/Ascend/aicpu/Ascend-aicpu_syskernels.tar.gz"):
        assert f"{home}/{kept}" in names, kept
    assert not any(n.startswith((f"{home}/tools/", f"{home}/include/", f"{home}/lib64/cmake")) for n in names)
    install_type = tree.extractfile(f"{home}/share/info/runtime/ascend_install.info")
    assert install_type is not None and "Runtime_Install_Type=run" in install_type.read().decode().splitlines()
