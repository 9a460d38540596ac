"""The renderer's cache of compiled templates (`<cache>/jinja`) trusts only this user's files: a
compiled template is code that runs when it is loaded, so one that anybody but this user could have
written there (a hostile cache, issue 48) is never loaded.

Each planted file is the real template's code after a line that writes a marker: loaded, it renders
as ever, so only the marker tells."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import jinja2
import jinja2.bccache
import pytest

from builder.plan import templating

ROOT = Path(__file__).resolve().parents[3]
NOBODY = 65534
as_root = pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user takes root")


def templates() -> list[str]:
    return templating.templates.list_templates(filter_func=lambda name: name.endswith(".j2"))


def plant(directory: Path, marker: Path) -> list[Path]:
    """Every template's compiled form, named as the cache names it, each writing marker when loaded."""
    env, names = templating.templates, jinja2.FileSystemBytecodeCache(str(directory))  # the latter only names files
    assert env.loader is not None
    planted = []
    for name in templates():
        source, filename, _ = env.loader.get_source(env, name)
        bucket = jinja2.bccache.Bucket(env, names.get_cache_key(name, filename), names.get_source_checksum(source))
        python = env.compile(source, name, filename, raw=True)
        bucket.code = compile(f"open({str(marker)!r}, 'a').write({name!r})\n{python}", filename or name, "exec")
        path = directory / f"__jinja2_{bucket.key}.cache"
        with path.open("wb") as out:
            bucket.write_bytecode(out)
        path.chmod(0o600)
        planted.append(path)
    return planted


def load_all(cache_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Load every template through the bytecode cache the renderer would open for this cache."""
    # No template held in memory: each one is loaded through the cache.
    env = templating.templates.overlay(bytecode_cache=templating._bytecode_cache(cache_root / "jinja"), cache_size=0)
    for name in templates():
        env.get_template(name)


def private_dir(path: Path) -> Path:
    path.mkdir(parents=True)
    path.chmod(0o700)
    return path


def test_the_users_own_compiled_templates_are_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: files this user wrote where only it can write are trusted, so the cache still saves
    the compile, and the planted code is what a loaded file runs."""
    marker = tmp_path / "MARKER"
    plant(private_dir(tmp_path / "cache" / "jinja"), marker)
    load_all(tmp_path / "cache", monkeypatch)
    assert marker.exists()


def writable_by_others(directory: Path, planted: list[Path]) -> None:
    for path in planted:
        path.chmod(0o666)


def group_writable(directory: Path, planted: list[Path]) -> None:
    for path in planted:
        path.chmod(0o620)


def another_users_files(directory: Path, planted: list[Path]) -> None:
    for path in planted:
        os.chown(path, NOBODY, NOBODY)


def another_users_directory(directory: Path, planted: list[Path]) -> None:
    os.chown(directory, NOBODY, NOBODY)


def a_directory_others_can_write(directory: Path, planted: list[Path]) -> None:
    directory.chmod(0o777)  # what was planted then is the user's own file now, 0600


@pytest.mark.parametrize(
    "spoil",
    [
        writable_by_others,
        group_writable,
        pytest.param(another_users_files, marks=as_root),
        pytest.param(another_users_directory, marks=as_root),
        a_directory_others_can_write,
    ],
)
def test_a_compiled_template_others_could_have_written_is_not_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spoil: Callable[[Path, list[Path]], None]
) -> None:
    marker = tmp_path / "MARKER"
    directory = private_dir(tmp_path / "cache" / "jinja")
    spoil(directory, plant(directory, marker))
    load_all(tmp_path / "cache", monkeypatch)
    assert not marker.exists()


def test_a_directory_others_could_write_is_closed_and_emptied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's own directory left open (an old cache made under umask 002): it is made private and
    what it held is dropped, since anyone could have put it there; the cache works on from there."""
    marker = tmp_path / "MARKER"
    directory = private_dir(tmp_path / "cache" / "jinja")
    plant(directory, marker)
    directory.chmod(0o775)
    load_all(tmp_path / "cache", monkeypatch)
    assert (directory.stat().st_mode & 0o777, marker.exists()) == (0o700, False)
    assert len(list(directory.iterdir())) == len(templates())  # compiled again, by this user


def test_a_link_in_place_of_the_directory_is_not_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not even to a directory of the user's own: closing and emptying one there would wreck it."""
    marker = tmp_path / "MARKER"
    elsewhere = private_dir(tmp_path / "project")
    planted = plant(elsewhere, marker)
    elsewhere.chmod(0o775)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "jinja").symlink_to(elsewhere)
    load_all(tmp_path / "cache", monkeypatch)
    assert not marker.exists()
    assert elsewhere.stat().st_mode & 0o777 == 0o775 and all(path.exists() for path in planted)


def test_render_runs_no_compiled_template_others_can_write(tmp_path: Path) -> None:
    """The whole command, as a user runs it: the planted files are there to be loaded, and are not."""
    marker = tmp_path / "MARKER"
    directory = private_dir(tmp_path / "cache" / "jinja")
    writable_by_others(directory, plant(directory, marker))
    env = dict(os.environ, STACKBUILD_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    run = subprocess.run(
        [sys.executable, "-m", "builder", "render", "reference"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert "FROM " in run.stdout and not marker.exists()
