"""One configuration cascade (issue 53): stackbuild's settings are resolved once, by
builder.cli.configuration, and passed down; nothing else under builder/ reads or writes a STACKBUILD_
variable, and the registry password is in no repr and no line a command prints."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest

from builder.cli.configuration import resolve
from builder.cli.context import Context
from builder.model.settings import RegistryCredentials, Settings
from tests.conftest import ROOT
from tests.fake_engine import FakeEngine
from tests.fake_registry import server
from tests.helpers import run_cli

BUILDER = ROOT / "builder"
RESOLVER = BUILDER / "cli" / "configuration.py"
PASSWORD = "s3cret-from-ci"


def _environ(node: ast.AST) -> bool:
    """os.environ, or environ imported from os."""
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _stackbuild_name(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("STACKBUILD_")


def environment_uses(tree: ast.AST) -> list[tuple[int, str]]:
    """Each read or write of a STACKBUILD_ variable: os.environ[...] (either way), os.environ.get/pop/
    setdefault, os.getenv/putenv, `in os.environ`, and os.environ.update/dict(os.environ, ...) naming one."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _environ(node.value) and _stackbuild_name(node.slice):
            found.append((node.lineno, "os.environ[...]"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            called = node.func
            names = [*node.args, *(k.value for k in node.keywords)] + [ast.Constant(k.arg) for k in node.keywords]
            if (_environ(called.value) or called.attr in ("getenv", "putenv")) and any(map(_stackbuild_name, names)):
                found.append((node.lineno, called.attr))
        elif isinstance(node, ast.Compare) and any(map(_environ, node.comparators)) and _stackbuild_name(node.left):
            found.append((node.lineno, "in os.environ"))
    return found


def offenders(root: Path) -> list[str]:
    return [
        f"{path.relative_to(root.parent)}:{line}: {how}"
        for path in sorted(root.rglob("*.py"))
        if path != RESOLVER
        for line, how in environment_uses(ast.parse(path.read_text()))
    ]


def test_only_the_settings_module_reads_stackbuild_variables() -> None:
    assert RESOLVER.is_file() and len(list(BUILDER.rglob("*.py"))) > 100  # the package itself is read
    assert not offenders(BUILDER), "resolve settings in builder/cli/configuration.py and pass them down"


def test_the_check_sees_every_form_of_reading_and_writing() -> None:
    code = """
import os
from os import environ
a = os.environ.get("STACKBUILD_CACHE")
b = os.environ["STACKBUILD_HOST_ROOT"]
c = os.getenv("STACKBUILD_BUILDER")
d = "STACKBUILD_SITE_CONFIG" in os.environ
os.environ["STACKBUILD_REGISTRY_HOST"] = "x"
os.environ.pop("STACKBUILD_REGISTRY_HOST", None)
e = environ.get("STACKBUILD_CACHE")
os.environ.update(STACKBUILD_CACHE="x")
f = os.environ.get("HOME")
"""
    assert [line for line, _ in environment_uses(ast.parse(code))] == [4, 5, 6, 7, 8, 9, 10, 11]


def test_the_command_line_beats_the_environment_beats_the_site_files_beats_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The site configuration's path has every level: --site-config, $STACKBUILD_SITE_CONFIG, the
    project's stackbuild.site.yaml, the user's (the default place)."""
    monkeypatch.chdir(tmp_path)
    project, user = tmp_path / "project", tmp_path / "config" / "stackbuild" / "site.yaml"
    for path in (project / "stackbuild.site.yaml", user, tmp_path / "env.yaml", tmp_path / "cli.yaml"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "STACKBUILD_SITE_CONFIG": str(tmp_path / "env.yaml")}
    assert resolve(env, project, tmp_path / "cli.yaml").site_config == tmp_path / "cli.yaml"
    assert resolve(env, project).site_config == tmp_path / "env.yaml"
    del env["STACKBUILD_SITE_CONFIG"]
    assert resolve(env, project).site_config == project / "stackbuild.site.yaml"
    assert resolve(env, tmp_path / "elsewhere").site_config == user
    assert resolve({"STACKBUILD_CACHE": "/c"}, project).cache_root == Path("/c")
    assert resolve({"XDG_CACHE_HOME": "/x"}, project).cache_root == Path("/x/stackbuild")
    assert resolve({"STACKBUILD_BUILDER": "classic"}, project).builder == "classic"
    assert resolve({"HOME": str(tmp_path)}, project).builder == "auto"


def test_the_password_is_in_no_repr() -> None:
    login = RegistryCredentials("ci", PASSWORD, "registry.internal:5000")
    settings = Settings(Path("/cache"), None, Path("/"), credentials=login)
    ctx = Context(root=Path("/project"), debug=False, settings=settings)
    for shown in (repr(login), repr(settings), str(settings), repr(ctx)):
        assert PASSWORD not in shown and "ci" in shown


def test_the_password_is_in_no_line_a_command_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """doctor with the environment's login, checking a registry that refuses it, and failing on one
    that is not there: neither its lines nor its JSON nor a traceback log say the password."""
    seen_logins: list[str] = []

    def refusing(request: object) -> tuple[int, dict[str, str], bytes]:
        seen_logins.append(str(getattr(request, "headers", {}).get("Authorization")))
        return 401, {"WWW-Authenticate": 'Basic realm="test"'}, b'{"errors":[{"code":"UNAUTHORIZED"}]}'

    monkeypatch.setattr(Context, "engine", lambda *_: FakeEngine())
    monkeypatch.setenv("STACKBUILD_REGISTRY_USERNAME", "ci")
    monkeypatch.setenv("STACKBUILD_REGISTRY_PASSWORD", PASSWORD)
    monkeypatch.delenv("STACKBUILD_REGISTRY_HOST", raising=False)
    site = tmp_path / "site.yaml"
    with server(refusing) as (address, _):
        site.write_text(f"cache_registry: {address}/cache\n")
        monkeypatch.setenv("STACKBUILD_SITE_CONFIG", str(site))
        _, out, err = run_cli(capsys, "--debug", "doctor")
        _, json_out, json_err = run_cli(capsys, "doctor", "--json")
    registry = next(c for c in json.loads(json_out)["checks"] if c["name"] == "registry")
    assert registry["verdict"] == "fail" and "refused the credentials" in registry["detail"]
    assert seen_logins and all(login == "None" or login.startswith("Basic ") for login in seen_logins)
    for printed in (out, err, json_out, json_err):
        assert PASSWORD not in printed
    assert "STACKBUILD_REGISTRY_HOST" not in os.environ


def test_without_a_home_directory_validate_runs_and_a_command_needing_the_cache_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Path.home() raises where the user has no home (a container's arbitrary UID): the defaults under
    it are left out, `validate` needs none of them, and a command that needs the cache exits 2 naming
    the variables that give it one (no traceback)."""

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    for name in ("STACKBUILD_CACHE", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "STACKBUILD_SITE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "--root", str(ROOT), "validate", str(ROOT / "stacks" / "reference.yaml"))
    assert code == 0, err
    code, _, err = run_cli(capsys, "--root", str(ROOT), "plan", "reference")
    assert code == 2 and "set STACKBUILD_CACHE or XDG_CACHE_HOME" in err and "Traceback" not in err


def test_a_builder_that_is_none_is_refused_at_the_edge_with_the_fix(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STACKBUILD_BUILDER", "bildkit")
    code, _, err = run_cli(capsys, "doctor")
    assert code == 2 and "STACKBUILD_BUILDER='bildkit' names no builder: say one of auto, buildkit, classic" in err
    assert "hostsetup" not in err
