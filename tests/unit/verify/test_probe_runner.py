"""The probe runner (what runs inside a stage's image) run on this host: real ELF files, ldd, bash and
Python, each probe kind passing and failing with the reason it gives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from builder.execute import environment
from builder.verify import probe_runner as runner
from builder.verify.probes import RUNNER

LS = "/bin/ls"  # an ELF64 executable linking libc on every Debian


def test_elf_section_sizes_a_section_and_names_why_there_is_none(tmp_path: Path) -> None:
    ok, message = runner.elf_section({"file": LS, "section": ".text"})
    assert ok and message.startswith(".text: ") and message.endswith(" bytes")
    assert runner.elf_section({"file": LS, "section": ".ascend.fatbin"}) == (
        False,
        f"{LS} has no .ascend.fatbin section",
    )
    (tmp_path / "text").write_text("not ELF")
    assert runner.elf_section({"file": str(tmp_path / "text"), "section": ".text"})[1].endswith("is not an ELF64 file")
    missing = str(tmp_path / "gone.so")
    assert runner.elf_section({"file": missing, "section": ".text"}) == (False, f"{missing}: No such file or directory")


def test_linked_from_checks_where_each_library_resolves() -> None:
    ok, message = runner.linked_from({"file": LS, "libraries": ["libc.so.6"], "within": "/"})
    assert ok and message.startswith("libc.so.6 -> /"), message
    ok, message = runner.linked_from({"file": LS, "libraries": ["libc.so.6"], "within": "/usr/local/Ascend"})
    assert not ok and "outside /usr/local/Ascend" in message
    ok, message = runner.linked_from({"file": LS, "libraries": ["libascendcl.so"], "within": "/"})
    assert (ok, message) == (False, f"{LS} does not link libascendcl.so")
    ok, message = runner.linked_from({"file": "/nonexistent", "libraries": [], "within": "/"})
    assert not ok and message.startswith("ldd /nonexistent failed")


def test_env_needs_each_variable_set_and_each_path_present(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SB_SET", "1")
    monkeypatch.setenv("SB_HOME", str(tmp_path))
    monkeypatch.setenv("SB_GONE", str(tmp_path / "gone"))
    monkeypatch.delenv("SB_UNSET", raising=False)
    assert runner.env({"set": ["SB_SET"], "paths": ["SB_HOME"]}) == (True, "all set")
    ok, message = runner.env({"set": ["SB_UNSET"], "paths": ["SB_GONE"]})
    assert not ok and message == f"SB_UNSET is not set; SB_GONE={tmp_path / 'gone'} does not exist"


def test_command_checks_the_exit_code_then_the_output() -> None:
    assert runner.command({"run": "echo launched", "exit_code": 0, "expect": "launch"}) == (True, "exit code 0")
    ok, message = runner.command({"run": "echo one; echo two >&2; exit 3", "exit_code": 0})
    assert not ok and message == "exit code 3, expected 0: one | two"
    assert runner.command({"run": "echo other", "exit_code": 0, "expect": "^launched"}) == (
        False,
        "output does not match '^launched'",
    )


def test_set_env_compares_the_image_env_with_what_the_scripts_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root = tmp_path / "Ascend"
    script = root / "set_env.sh"
    root.mkdir()
    script.write_text(
        f'export SB_TOOLKIT_HOME={root}/cann\nexport SB_LIBS="{root}/cann/lib64${{SB_LIBS:+:$SB_LIBS}}"\n'
    )
    probe = {"root": str(root), "scripts": [[str(script), True]]}
    monkeypatch.setenv("SB_TOOLKIT_HOME", f"{root}/cann")
    monkeypatch.setenv("SB_LIBS", f"{root}/cann/lib64:/usr/lib/extra")  # the script prepends to what was there
    assert runner.set_env(probe) == (True, "ENV is what the scripts set")
    monkeypatch.setenv("SB_TOOLKIT_HOME", "/elsewhere")
    ok, message = runner.set_env(probe)
    assert not ok and message == f"SB_TOOLKIT_HOME is /elsewhere in ENV but {root}/cann from the scripts"
    monkeypatch.delenv("SB_TOOLKIT_HOME")
    ok, message = runner.set_env(probe)
    assert not ok and message == f"SB_TOOLKIT_HOME is not in ENV (the scripts set {root}/cann)"
    broken = {"root": str(root), "scripts": [[str(root / "missing.sh"), True]]}
    assert runner.set_env(broken)[1].startswith(f"cannot source {root / 'missing.sh'}")
    optional = {"root": str(root), "scripts": [[str(root / "missing.sh"), False]]}
    assert runner.set_env(optional)[0]


def test_search_paths_are_baked_without_empty_or_repeated_entries(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A script that prepends to an unset PYTHONPATH leaves a trailing ':' (the current directory on the
    import path); sourced twice, LD_LIBRARY_PATH holds its entries twice. Baked, each is tidied, and
    the set-env probe takes the tidied value as what the scripts set. Other variables are left as set."""
    assert runner.tidied("PYTHONPATH", "/opt/a/python:") == "/opt/a/python"
    assert runner.tidied("LD_LIBRARY_PATH", "/x:/y::/x:/z") == "/x:/y:/z"
    assert runner.tidied("SB_NAMESPACE", "a::b") == "a::b"
    output = "\n".join(
        [
            'stackbuild-env-before {"PATH": "/usr/bin"}',
            'stackbuild-env-after {"PATH": "/t/bin:/usr/bin:/t/bin", "PYTHONPATH": "/t/py:", "SB_URL": "http://h:1"}',
        ]
    )
    assert environment.set_by_scripts(output) == {
        "PATH": "/t/bin:/usr/bin",
        "PYTHONPATH": "/t/py",
        "SB_URL": "http://h:1",
    }
    root = tmp_path / "Ascend"
    root.mkdir()
    script = root / "set_env.sh"
    script.write_text(f'export PYTHONPATH="{root}/python:$PYTHONPATH"\n')
    monkeypatch.setenv("PYTHONPATH", f"{root}/python")  # baked tidied: the scripts' own value ends in ':'
    assert runner.set_env({"root": str(root), "scripts": [[str(script), True]]}) == (
        True,
        "ENV is what the scripts set",
    )


def test_imports_and_exists() -> None:
    assert runner.imports({"modules": ["json", "sqlite3"]}) == (True, "json, sqlite3 import")
    ok, message = runner.imports({"modules": ["stackbuild_no_such_module"]})
    assert not ok and message.startswith("cannot import stackbuild_no_such_module: ModuleNotFoundError")
    assert runner.exists({"paths": [LS, "/"]}) == (True, "all present")
    assert runner.exists({"paths": ["/nonexistent/x"]}) == (False, "not installed: /nonexistent/x")


def test_the_runner_as_an_image_runs_it_prints_one_outcome_per_probe_and_a_crash_fails_its_probe() -> None:
    probes = [{"kind": "exists", "paths": [LS]}, {"kind": "command"}, {"kind": "env", "set": [], "paths": []}]
    run = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(probes)], capture_output=True, text=True, check=True)
    assert json.loads(run.stdout) == [
        {"ok": True, "message": "all present"},
        {"ok": False, "message": "KeyError: 'run'"},
        {"ok": True, "message": "all set"},
    ]
