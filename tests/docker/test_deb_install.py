"""Locked .debs install over a bare base in apt's order, offline, at exactly the locked versions.

The closure is made here with dpkg-deb: sbtop depends on sbmain, which pre-depends on sbpre, none
of them in a bare Debian minbase. A single `dpkg -i` of every file (how stages installed them
before) unpacks sbmain before sbpre is configured and refuses it; the shipped install step
(templates/debs.j2 and install-debs.sh) installs all three. A failing maintainer script is said
in the stage's headline with dpkg's own reason.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import jinja2
import pytest

from builder.cli.configuration import cache_root
from builder.engine import BuildFailed
from builder.engine.docker_engine import DockerEngine
from builder.engine.protocol import BuildSpec
from builder.inputs import bootstrap
from builder.inputs.contexts import ContextItem, FileItem, write_context
from builder.lock.locked import LockedDeb
from builder.manifest.bases import Bootstrap
from builder.model.arch import Arch
from builder.plan.debs_at_hand import context_items
from builder.store.cache import Cache
from builder.store.files import sha256_file
from builder.verify.diagnose import install_failure
from tests.conftest import TEST_PREFIX
from tests.debrepo import make_deb, serve, write_index
from tests.docker.conftest import stackbuild, write_variant

DEBIAN = "http://deb.debian.org/debian"
MINBASE = f"{TEST_PREFIX}/minbase:bookworm"
RUNTIME = "  - id: runtime\n    source: {path: reference/runtime}\n"
# What debs.j2 rendered before: one dpkg -i of the whole closure.
SINGLE_DPKG = "RUN DEBIAN_FRONTEND=noninteractive dpkg -i {files} && rm -rf /tmp/stackbuild-debs\n"


@pytest.fixture(scope="module")
def minbase(engine: DockerEngine) -> Iterator[str]:
    """A bare Debian minbase image (Essential packages and apt: no python3), bootstrapped here."""
    cache = Cache(cache_root(os.environ))
    spec = Bootstrap(suite="bookworm", mirror=DEBIAN, variant="minbase")
    tarball = bootstrap.bootstrap(spec, Arch.host(), "runtime", None, cache, DEBIAN, print)
    dockerfile = "FROM scratch\nADD rootfs.tar /\n"
    image = build(engine, dockerfile, [FileItem("rootfs.tar", lambda: cache.blob(tarball.sha256))])
    engine.tag(image, MINBASE)  # BuildKit takes a local image by its name, not by its id
    yield MINBASE
    engine.remove(MINBASE)


def build(engine: DockerEngine, dockerfile: str, items: Sequence[ContextItem]) -> str:
    cache = Cache(cache_root(os.environ))
    with cache.scratch.temp_dir() as context:
        write_context(context, dockerfile, items, cache)
        return engine.build(context, lambda line: None, BuildSpec(labels={}, arch=Arch.host()))


def locked(deb: Path, name: str, version: str) -> LockedDeb:
    """The lock's entry for a .deb, which goes into the cache as a lock puts it there."""
    Cache(cache_root(os.environ)).add_file(deb, sha256_file(deb))
    return LockedDeb(
        name=name,
        version=version,
        architecture="all",
        repository="http://apt.example.invalid/debian",
        path=f"pool/main/{deb.name}",
        sha256=sha256_file(deb),
        size=deb.stat().st_size,
    )


@pytest.fixture(name="debs")
def closure(tmp_path: Path) -> list[LockedDeb]:
    """sbtop -> sbmain =Pre-Depends=> sbpre, listed top first: the install step must order them."""
    pool = tmp_path / "pool"
    files = [
        make_deb(pool, "sbtop", "1.0", depends=["sbmain (>= 1.0)"], files={"usr/share/sb/top": "1.0"}),
        make_deb(pool, "sbmain", "1.0", pre_depends=["sbpre (>= 1.0)"], files={"usr/share/sb/main": "1.0"}),
        make_deb(pool, "sbpre", "1.0", files={"usr/share/sb/pre": "1.0"}),
    ]
    return [locked(f, f.name.split("_")[0], "1.0") for f in files]


def install_step(debs: list[LockedDeb]) -> str:
    """The shipped install step, rendered as a stage renders it."""
    templates = jinja2.Environment(loader=jinja2.PackageLoader("builder.plan", "templates"))
    return templates.get_template("debs.j2").render(debs=[d.file for d in debs])


def test_a_pre_depends_closure_installs_over_a_bare_minbase_where_a_single_dpkg_i_fails(
    engine: DockerEngine, minbase: str, debs: list[LockedDeb]
) -> None:
    copy = 'COPY ["debs/", "/tmp/stackbuild-debs/"]\n'
    listed = " ".join(f"/tmp/stackbuild-debs/{d.file}" for d in reversed(debs))  # apt's order: sbpre first
    with pytest.raises(BuildFailed) as refused:
        build(
            engine,
            f"FROM {minbase}\n{copy}{SINGLE_DPKG.format(files=listed)}",
            list(context_items(debs, Cache(cache_root(os.environ)))),
        )
    assert "pre-dependency problem - not installing sbmain" in "\n".join(refused.value.log_tail)

    image = build(
        engine, f"FROM {minbase}\n{install_step(debs)}", list(context_items(debs, Cache(cache_root(os.environ))))
    )
    try:
        query = ["dpkg-query", "-W", "-f", "${db:Status-Abbrev}${Package}=${Version}\\n", "sbtop", "sbmain", "sbpre"]
        installed = engine.run(image, query)
        assert installed.exit_code == 0, installed.output
        assert sorted(installed.output.split("\n")[:3]) == ["ii sbmain=1.0", "ii sbpre=1.0", "ii sbtop=1.0"]
        assert engine.run(image, ["test", "!", "-e", "/tmp/stackbuild-debs"]).exit_code == 0
        assert engine.run(image, ["sh", "-c", "! command -v python3"]).exit_code == 0, "the base was not bare"
    finally:
        engine.remove(image)


def test_a_file_holding_another_version_than_the_locked_one_is_refused_naming_both(
    engine: DockerEngine, minbase: str, debs: list[LockedDeb], tmp_path: Path
) -> None:
    newer = make_deb(tmp_path / "newer", "sbpre", "2.0", files={"usr/share/sb/pre": "2.0"})
    items = [
        FileItem(item.arcname, lambda: newer) if item.arcname == "debs/sbpre_1.0_all.deb" else item
        for item in context_items(debs, Cache(cache_root(os.environ)))
    ]
    with pytest.raises(BuildFailed) as refused:
        build(engine, f"FROM {minbase}\n{install_step(debs)}", items)
    headline = install_failure(refused.value.log_tail)
    assert headline is not None, refused.value.log_tail
    assert headline.startswith(
        "cannot install system package sbpre: sbpre_1.0_all.deb holds sbpre 2.0, not the locked sbpre 1.0 (sha256 "
    ), headline


def test_a_failing_maintainer_script_is_dpkgs_reason_in_the_stage_headline(workspace: Path, tmp_path: Path) -> None:
    repo = tmp_path / "apt"
    script = 'echo "sbbad: cannot set up the frobnicator" >&2; exit 3'
    make_deb(repo / "pool" / "main", "sbbad", "1.0", postinst=script, files={"usr/share/sb/bad": "1.0"})
    write_index(repo)
    with serve(repo) as url:
        name = write_variant(
            workspace,
            "reftest-badpostinst",
            [
                (
                    "python_index: ",
                    f"apt_repositories:\n  - {{url: '{url}', suite: stable, trusted: true}}\npython_index: ",
                ),
                (RUNTIME, RUNTIME + "    system_packages: [sbbad]\n"),
            ],
        )
        stackbuild(workspace, "lock", name, check=True)
    run = stackbuild(workspace, "build", name, "--no-smoke")
    assert run.returncode == 1, run.stdout + run.stderr
    headline = next(line for line in run.stderr.splitlines() if "stage runtime failed" in line)
    assert headline == (
        "stackbuild: error: stage runtime failed: cannot install system package sbbad: installed sbbad package "
        "post-installation script subprocess returned error exit status 3"
    ), run.stderr[-3000:]
    assert "stackbuild: | dpkg: error processing package sbbad (--configure):" in run.stderr
