"""Property-based fuzzing (hypothesis) of the loaders and the CLI on generated input.

In-process through the CLI's entry function: manifests (structured mutations of a valid one,
and raw bytes) through `validate`; site configurations and lockfiles through `render`. Each
case ends in success or clear located lines with exit code 2, never a traceback, within 2 s.
Some 50 more cases run as real subprocesses (counts are CI's; a developer's fast tier draws a tenth).
Then: for generated strings in every manifest
field that reaches a Dockerfile, the rendered Dockerfile parses (dockerfile-parse) to exactly
the template's instructions.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from dockerfile_parse import DockerfileParser
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder import lock as lock_io
from builder.cli import main
from builder.execute import chain
from builder.lock.locked import Lock
from builder.manifest.model import Manifest
from tests.conftest import ROOT
from tests.golden_plan import GOLDEN, golden_lock, golden_request
from tests.helpers import fuzz_cases
from tests.mutations import leaf, leaf_paths, mutate, text

FUZZ = settings(
    deadline=2000,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def dump(data: Any) -> str:
    return yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), allow_unicode=True)


def assert_clean(code: int, err: str, path: Path | None = None) -> None:
    assert code in (0, 2), err
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 2:
        lines = err.strip().splitlines()
        assert lines, "an exit code 2 without a word"
        if path is not None:
            assert all(line.startswith(str(path)) for line in lines), err


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A small locked stack (image base, a generated package, a path source) to render."""
    root = tmp_path_factory.mktemp("fuzz")
    (root / "stacks" / "app").mkdir(parents=True)
    (root / "stacks" / "app" / "Makefile").write_text("all:\n")
    text = (ROOT / "tests" / "manifests" / "valid.yaml").read_text().replace("source: {path: .}", "source: {path: app}")
    text = text.replace("name: mini", "name: demo")
    start, end = text.index("      x86_64:"), text.index("host:")
    generated = '      x86_64:\n        file: tk.run\n        generate: "printf tk > {output_dir}/tk.run"\n'
    (root / "stacks" / "demo.yaml").write_text(text[:start] + generated + text[end:])
    (root / "site.yaml").write_text("{}\n")
    before = os.environ.get("STACKBUILD_CACHE")
    os.environ["STACKBUILD_CACHE"] = str(root / "cache")
    assert main(["--root", str(root), "--site-config", str(root / "site.yaml"), "lock", "demo"]) == 0
    yield root
    if before is None:
        del os.environ["STACKBUILD_CACHE"]
    else:
        os.environ["STACKBUILD_CACHE"] = before


VALID_MANIFEST = yaml.safe_load((ROOT / "tests" / "manifests" / "valid.yaml").read_text())
MANIFEST_PATHS = list(leaf_paths(VALID_MANIFEST))
edits = st.lists(
    st.tuples(st.sampled_from(MANIFEST_PATHS), st.sampled_from(["set", "delete", "add"]), leaf), max_size=4
)


def validate_batch(files: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    """One `validate` of several manifests: each is `ok:` on stdout or located lines on stderr."""
    code = main(["validate", *map(str, files)])
    out, err = capsys.readouterr()
    assert code in (0, 2), err
    assert "Traceback" not in err and "internal error" not in err, err
    failed = {line.split(":", 1)[0] for line in err.splitlines()}
    assert failed <= {str(f) for f in files}, err
    assert (code == 2) == bool(failed)
    assert {line.removeprefix("ok: ").split(" (warning")[0] for line in out.splitlines()} == {
        str(f) for f in files
    } - failed


BATCH = 5  # manifests per `validate` call: each is one fuzzed case


@settings(FUZZ, max_examples=fuzz_cases(350))
@given(batch=st.lists(edits, min_size=BATCH, max_size=BATCH))
def test_fuzz_manifests_through_validate(
    batch: list[list[tuple[tuple[Any, ...], str, Any]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [tmp_path / f"m{n}.yaml" for n in range(BATCH)]
    for path, case in zip(files, batch, strict=True):
        path.write_text(dump(mutate(VALID_MANIFEST, case)))
    validate_batch(files, capsys)


@settings(FUZZ, max_examples=fuzz_cases(450))
@given(
    batch=st.lists(
        st.one_of(st.binary(max_size=300), st.text(max_size=300).map(str.encode)), min_size=BATCH, max_size=BATCH
    )
)
def test_fuzz_raw_bytes_through_validate(
    batch: list[bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [tmp_path / f"m{n}.yaml" for n in range(BATCH)]
    for path, content in zip(files, batch, strict=True):
        path.write_bytes(content)
    validate_batch(files, capsys)


SITE = {
    "url_rewrites": [{"from": "https://github.com/", "to": "https://mirror/"}],
    "installer_dirs": ["/srv/cann"],
    "cache_registry": "r:5000/c",
    "repos": {"a": "https://git/a.git"},
}
site_edits = st.lists(
    st.tuples(st.sampled_from(list(leaf_paths(SITE))), st.sampled_from(["set", "delete", "add"]), leaf), max_size=3
)


@settings(FUZZ, max_examples=fuzz_cases(400))
@given(edits=site_edits, raw=st.one_of(st.none(), st.binary(max_size=100)))
def test_fuzz_site_configs_through_render(
    edits: list[tuple[tuple[Any, ...], str, Any]], raw: bytes | None, demo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = demo / "fuzz-site.yaml"
    if raw is None:
        site.write_text(dump(mutate(SITE, edits)))
    else:
        site.write_bytes(raw)
    code = main(["--root", str(demo), "--site-config", str(site), "render", "demo", "--arch", "x86_64"])
    assert_clean(code, capsys.readouterr().err)


@pytest.fixture(scope="module")
def demo_lock(demo: Path) -> Any:
    return json.loads((demo / "lockfiles" / "demo.lock.json").read_text())


@settings(FUZZ, max_examples=fuzz_cases(600))
@given(data=st.data())
def test_fuzz_lockfiles_through_render(
    data: st.DataObject, demo: Path, demo_lock: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    lock_edits = data.draw(
        st.lists(
            st.tuples(st.sampled_from(list(leaf_paths(demo_lock))), st.sampled_from(["set", "delete", "add"]), leaf),
            max_size=3,
        )
    )
    mutated = mutate(demo_lock, lock_edits)
    if data.draw(st.booleans()) and isinstance(mutated, dict):
        with contextlib.suppress(Exception):  # resealed, as an attacker would: the digest alone must not stop it
            mutated["lock_sha256"] = Lock.model_validate(mutated).content_sha256()
    path = demo / "lockfiles" / "demo.lock.json"
    original = path.read_text()
    try:
        path.write_text(json.dumps(mutated, ensure_ascii=False))
        code = main(
            ["--root", str(demo), "--site-config", str(demo / "site.yaml"), "render", "demo", "--arch", "x86_64"]
        )
        # What render took must be a lock on its own: it reads back, sealed by its own content.
        accepted = lock_io.read(path) if code == 0 else None
    finally:
        path.write_text(original)
    err = capsys.readouterr().err
    assert_clean(code, err)
    if accepted is not None:
        assert accepted.lock_sha256 == accepted.content_sha256()


@settings(max_examples=fuzz_cases(10), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(edits, min_size=5, max_size=5))
def test_fuzz_manifests_through_real_subprocesses(
    batch: list[list[tuple[tuple[Any, ...], str, Any]]], tmp_path: Path
) -> None:
    """50 cases as real processes (10 examples of 5, run side by side): what a user's shell sees."""
    paths = []
    for n, case in enumerate(batch):
        paths.append(tmp_path / f"m{n}.yaml")
        paths[-1].write_text(dump(mutate(VALID_MANIFEST, case)))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "builder", "validate", str(p)], stderr=subprocess.PIPE, text=True, env=env
        )
        for p in paths
    ]
    for proc, path in zip(procs, paths, strict=True):
        _, err = proc.communicate(timeout=30)
        assert_clean(proc.returncode, err, path)


# -- rendered Dockerfiles keep the template's instructions, whatever the strings ---------------


def instructions(dockerfile: str) -> list[tuple[str, int | None]]:
    """Each instruction, with the number of arguments of its JSON (exec/COPY) form: a string that split one
    argument in two, or added one, changes the list."""
    parser = DockerfileParser(fileobj=io.BytesIO())
    parser.content = dockerfile
    found = []
    for item in parser.structure:
        value = item["value"].split(" ", 1)[-1] if item["value"].startswith("--from=") else item["value"]
        found.append((item["instruction"], len(json.loads(value)) if value.startswith("[") else None))
    return found


GOLDEN_DATA = yaml.safe_load((GOLDEN / "golden.yaml").read_text())
DOCKERFILE_FIELDS: dict[str, tuple[Any, ...]] = {
    "build step": ("components", 0, "build", 0),
    "env value": ("components", 1, "env", "PATH"),
    "artifact path": ("components", 1, "artifacts", 0, "path"),
    "package file": ("toolkit", "packages", "toolkit", "x86_64", "file"),
    "git ref": ("components", 0, "source", "ref"),
    "probe command": ("components", 1, "probes", 0, "run"),
    "description": ("description",),
}


@pytest.fixture(scope="module")
def baseline() -> dict[str, list[tuple[str, int | None]]]:
    plan = chain.plan(golden_request(), print)
    return {s.name: instructions(s.dockerfile) for s in plan.order()}


@settings(max_examples=fuzz_cases(300), deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(sorted(DOCKERFILE_FIELDS)), value=text)
def test_generated_strings_never_change_the_instructions(
    field: str, value: str, baseline: dict[str, list[tuple[str, int | None]]]
) -> None:
    data = mutate(GOLDEN_DATA, [(DOCKERFILE_FIELDS[field], "set", value)])
    try:
        manifest = Manifest.model_validate(data)
    except ValueError:
        return  # refused at validation: it never reaches a Dockerfile
    request = golden_request()
    locked = golden_lock(manifest).sealed()
    request = request.__class__(manifest, request.manifest_path, locked, request.site, request.cache, request.arch)
    plan = chain.plan(request, print)
    assert {s.name: instructions(s.dockerfile) for s in plan.order()} == baseline
