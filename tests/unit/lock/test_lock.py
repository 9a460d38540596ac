"""Locking against real git (a `git daemon` on loopback, file://) and a loopback HTTP server."""

import hashlib
import http.server
import importlib.util
import json
import re
import shutil
import socket
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path

import nox.command
import pytest

from builder import lock, manifest
from builder.cli import main
from builder.execute import chain
from builder.inputs.site import SiteConfig
from builder.lock.resolver import Resolver
from builder.model.arch import Arch
from builder.model.errors import Unreached
from builder.plan.prepare import Request
from builder.store.cache import Cache
from builder.store.http import HttpClient
from tests.conftest import ROOT
from tests.helpers import (
    add_submodule,
    commit,
    context_files,
    free_port,
    git,
    git_daemon,
    hadolint,
    http_server,
    incomplete_parts,
    make_repo,
    run_cli,
    serving_bytes,
)

MANIFEST = """\
schema: 1
name: demo
toolkit:
  vendor: cpusim
  version: 8.3.RC1
  chip: 910b
  packages:
    toolkit:
      x86_64:
        file: tk.run
        generate: "printf 'toolkit-v1' > {output_dir}/tk.run"
host: {driver: none}
platform: {os: debian, os_version: "12", python: "3.11", architectures: [x86_64]}
base:
  image: debian@sha256:1111111111111111111111111111111111111111111111111111111111111111
components:
  - id: lib
    source: {git: GIT/lib, ref: main}
  - id: tool
    source: {git: GIT/tool, ref: main}
    depends_on: [lib]
  - id: app
    source: {path: app}
    depends_on: [tool]
smoke: {command: "true", expect: ""}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path, str]]:
    """(project root, repos dir, git daemon URL) with stacks/demo.yaml."""
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))
    (tmp_path / "empty-site.yaml").write_text("{}\n")
    monkeypatch.setenv("STACKBUILD_SITE_CONFIG", str(tmp_path / "empty-site.yaml"))
    repos = tmp_path / "repos"
    make_repo(repos / "lib")
    make_repo(repos / "tool")
    root = tmp_path / "project"
    (root / "stacks" / "app").mkdir(parents=True)
    (root / "stacks" / "app" / "main.py").write_text("print('v1')\n")
    with git_daemon(repos) as url:
        (root / "stacks" / "demo.yaml").write_text(MANIFEST.replace("GIT", url))
        yield root, repos, url


def test_lock_then_check(project: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    root, repos, url = project
    code, out, err = run_cli(capsys, "--root", str(root), "lock", "demo")
    assert code == 0, err
    path = root / "lockfiles" / "demo.lock.json"
    assert out.strip() == str(path)
    data = json.loads(path.read_text())
    assert data["lock_version"] == 2 and data["stack"] == "demo"
    assert data["order"] == ["lib", "tool", "app"]
    sources = {c["id"]: c["source"] for c in data["components"]}
    assert sources["lib"]["commit"] == (repos / "lib" / ".git" / "refs" / "heads" / "main").read_text().strip()
    assert sources["lib"]["url"] == f"{url}/lib"
    assert len(sources["app"]["tree_sha256"]) == 64
    assert data["architectures"]["x86_64"]["packages"][0]["sha256"] == hashlib.sha256(b"toolkit-v1").hexdigest()
    assert lock.read(path).lock_sha256 == data["lock_sha256"]
    code, out, _ = run_cli(capsys, "--root", str(root), "lock", "--check", "demo")
    assert code == 0 and out.startswith("up to date")


def test_a_lock_made_for_a_build_is_the_one_a_later_build_reads(
    project: tuple[Path, Path, str], tmp_path: Path
) -> None:
    """chain.locked locks a stack without a lock first: what it hands the build is sealed, the lock
    the next build reads from disk (else the first build's images carry an empty lock digest and
    the next build makes its finals again)."""
    root, _, _ = project
    path = root / "stacks" / "demo.yaml"
    target = root / "lockfiles" / "demo.lock.json"
    resolver = Resolver(path.parent, SiteConfig(), Cache(tmp_path / "cache"), HttpClient(), print)
    made = chain.locked(manifest.load(path), target, resolver, Arch.X86_64)
    assert made.lock_sha256 == made.content_sha256() != ""
    assert made == lock.read(target) == chain.locked(manifest.load(path), target, resolver, Arch.X86_64)


def locked_commits(root: Path) -> dict[str, str | None]:
    return {
        c["id"]: c["source"].get("commit")
        for c in json.loads((root / "lockfiles" / "demo.lock.json").read_text())["components"]
    }


def test_a_branch_that_moved_upstream_keeps_its_pin_until_update_moves_it(
    project: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Pins move only when asked (issue 51): a plain `lock` keeps a branch's locked commit while its
    repository still serves it; `lock --check` notes the move with the command that moves it, exit 0."""
    root, repos, _ = project
    assert run_cli(capsys, "--root", str(root), "lock", "demo")[0] == 0
    before = locked_commits(root)
    lib2 = commit(repos / "lib", "v2")
    code, _, err = run_cli(capsys, "--root", str(root), "lock", "demo")
    assert code == 0, err
    assert locked_commits(root) == before
    kept = f"keeping the lock's {before['lib']:.12} (`stackbuild lock demo --update lib` moves it)"
    assert f"component lib: main moved to {lib2[:12]} upstream; {kept}" in err
    code, out, err = run_cli(capsys, "--root", str(root), "lock", "--check", "demo")
    assert code == 0, err
    assert out.startswith("up to date")
    assert (
        f"note: component lib: main moved upstream {before['lib']:.12} -> {lib2[:12]}; the lock keeps "
        f"{before['lib']:.12} (run `stackbuild lock demo --update lib` to move it)"
    ) in err
    assert "out of date" not in err


def test_update_moves_every_pin_or_the_one_it_names(
    project: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, repos, _ = project
    assert run_cli(capsys, "--root", str(root), "lock", "demo")[0] == 0
    before = locked_commits(root)
    lib2, tool2 = commit(repos / "lib", "v2"), commit(repos / "tool", "v2")
    assert run_cli(capsys, "--root", str(root), "lock", "demo", "--update", "tool")[0] == 0
    assert locked_commits(root) == {**before, "tool": tool2}
    assert run_cli(capsys, "--root", str(root), "lock", "demo", "--update")[0] == 0
    assert locked_commits(root) == {**before, "lib": lib2, "tool": tool2}
    code, _, err = run_cli(capsys, "--root", str(root), "lock", "--check", "demo")
    assert code == 0 and "note:" not in err


def test_a_changed_manifest_ref_relocks_without_update(
    project: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, repos, url = project
    assert run_cli(capsys, "--root", str(root), "lock", "demo")[0] == 0
    before = locked_commits(root)
    git("checkout", "-q", "-b", "release", cwd=repos / "lib")
    release = commit(repos / "lib", "release")
    manifest = root / "stacks" / "demo.yaml"
    manifest.write_text(manifest.read_text().replace(f"{url}/lib, ref: main", f"{url}/lib, ref: release"))
    code, _, err = run_cli(capsys, "--root", str(root), "lock", "--check", "demo")
    assert code == 1 and "components.lib.source.ref: the lock has 'main', the manifest 'release'" in err
    assert run_cli(capsys, "--root", str(root), "lock", "demo")[0] == 0
    assert locked_commits(root) == {**before, "lib": release}


def test_a_locked_commit_no_longer_served_is_drift_and_relocked(
    project: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A force-push that drops the locked commit: plain `lock` would move the pin, so `--check` fails."""
    root, repos, _ = project
    assert run_cli(capsys, "--root", str(root), "lock", "demo")[0] == 0
    old = locked_commits(root)["lib"]
    git("commit", "-q", "--amend", "-m", "rewritten", cwd=repos / "lib")
    new = git("rev-parse", "HEAD", cwd=repos / "lib")
    git("reflog", "expire", "--expire=now", "--all", cwd=repos / "lib")
    git("gc", "-q", "--prune=now", cwd=repos / "lib")
    code, _, err = run_cli(capsys, "--root", str(root), "lock", "--check", "demo")
    assert code == 1
    assert f"component lib: main moved {old} -> {new}, and the locked commit is no longer served" in err
    code, _, err = run_cli(capsys, "--root", str(root), "lock", "demo")
    assert code == 0 and "no longer serves the locked" in err
    assert locked_commits(root)["lib"] == new


def test_an_unreachable_source_is_an_outage_not_drift(
    project: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """lock --check exits 3 when a repository does not answer (CI retries that), 1 when something drifted."""
    root, _, url = project
    assert run_cli(capsys, "--root", str(root), "lock", "demo")[0] == 0
    with socket.socket() as closed:  # a loopback port nothing listens on
        closed.bind(("127.0.0.1", 0))
        dead = f"git://127.0.0.1:{closed.getsockname()[1]}"
    site = tmp_path / "empty-site.yaml"
    site.write_text(f'url_rewrites:\n  - {{from: "{url}/tool", to: "{dead}/tool"}}\n')
    code, out, err = run_cli(capsys, "--root", str(root), "lock", "--check", "demo")
    assert code == 3, err
    assert "unreachable: component tool: " in err and "out of date" not in err and out == ""
    (root / "stacks" / "app" / "main.py").write_text("print('v2')\n")  # drift besides the outage:
    code, _, err = run_cli(capsys, "--root", str(root), "lock", "--check", "demo")  # drift decides the code
    assert code == 1 and "component app: source tree" in err and "unreachable: component tool: " in err
    tool = locked_commits(root)["tool"]  # a plain lock keeps the pin of a source that does not answer
    code, _, err = run_cli(capsys, "--root", str(root), "lock", "demo")
    assert code == 0 and f"component tool: {dead}/tool: cannot list refs" in err and "keeping the lock's" in err
    assert locked_commits(root)["tool"] == tool


def test_an_unreachable_submodule_host_is_an_outage_too(
    project: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, repos, url = project
    make_repo(repos / "dep", "dep")
    add_submodule(repos / "lib", f"{url}/dep", "3rdparty/dep")
    assert run_cli(capsys, "--root", str(root), "lock", "demo")[0] == 0
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead = f"git://127.0.0.1:{closed.getsockname()[1]}"
    (tmp_path / "empty-site.yaml").write_text(f'url_rewrites:\n  - {{from: "{url}/dep", to: "{dead}/dep"}}\n')
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "another-machine"))  # nothing fetched before
    code, _, err = run_cli(capsys, "--root", str(root), "lock", "--check", "demo")
    assert code == 3, err
    assert "unreachable: component lib: submodule 3rdparty/dep" in err and "out of date" not in err


def test_changed_tree_manifest_and_package_are_reported(
    project: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, _, _ = project
    assert run_cli(capsys, "--root", str(root), "lock", "demo")[0] == 0
    (root / "stacks" / "app" / "main.py").write_text("print('v2')\n")
    manifest = root / "stacks" / "demo.yaml"
    manifest.write_text(manifest.read_text().replace("toolkit-v1", "toolkit-v2"))
    code, _, err = run_cli(capsys, "--root", str(root), "lock", "--check", "demo")
    assert code == 1
    assert "demo.yaml changed" in err
    assert "component app: source tree " in err
    assert "package tk.run: generated sha256 " in err


def test_update_of_no_such_component_is_refused(
    project: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, _, _ = project
    code, _, err = run_cli(capsys, "--root", str(root), "lock", "--update", "nope", "demo")
    assert code == 2 and "--update nope: no such component" in err and "(components: " in err, err
    assert err.strip().splitlines()[-1].startswith("stackbuild: error: --update") and "traceback" not in err, err


def test_a_git_host_that_gives_no_answer_and_no_pin_to_keep_is_exit_3_with_the_way_on(
    project: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing to lock the component with: exit 3 (not reached), one line naming the component, the host
    and the site rewrite that points it at a mirror; no lock written, no traceback."""
    root, _, url = project
    manifest = root / "stacks" / "demo.yaml"
    manifest.write_text(manifest.read_text().replace(url, f"git://127.0.0.1:{free_port()}"))
    code, _, err = run_cli(capsys, "--root", str(root), "lock", "demo")
    last = err.strip().splitlines()[-1]
    assert code == 3 and last.startswith("stackbuild: error: component lib: git://127.0.0.1:"), err
    assert "url_rewrites in " in last and "traceback" not in err, err
    assert not (root / "lockfiles" / "demo.lock.json").exists()


def test_a_package_without_a_sha256_whose_host_gives_no_answer_stops_the_lock_with_the_way_on(
    tmp_path: Path,
) -> None:
    """The shipped 6.3.RC1 stack publishes no sha256: its file is the only source of one, so a host that
    does not answer stops the lock (Unreached: exit 3, one line) naming the file and each way on."""
    from builder.model.retry import RetryPolicy

    loaded = manifest.load(ROOT / "stacks" / "6.3.RC1.yaml")
    dead = f"http://127.0.0.1:{free_port()}/"
    site = SiteConfig.model_validate(
        {"url_rewrites": [{"from": "https://ascend-repo.obs.cn-east-2.myhuaweicloud.com/", "to": dead}]}
    )
    client = HttpClient(RetryPolicy(attempts=1, longest=0.0))
    resolver = Resolver(ROOT / "stacks", site, Cache(tmp_path / "cache"), client, print)
    package = loaded.toolkit.packages.of("toolkit")[Arch.X86_64]
    with pytest.raises(Unreached, match=r"^Ascend-cann-toolkit_6\.3\.RC1_linux-x86_64\.run: .*installer_dirs"):
        resolver.package("toolkit", package, loaded.toolkit)


def test_tampered_lock_is_refused(project: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    root, _, _ = project
    assert run_cli(capsys, "--root", str(root), "lock", "demo")[0] == 0
    path = root / "lockfiles" / "demo.lock.json"
    path.write_text(path.read_text().replace('"stack": "demo"', '"stack": "dem0"'))
    code, _, err = run_cli(capsys, "--root", str(root), "lock", "--check", "demo")
    assert code == 2 and "lock_sha256 does not match its content" in err  # bad input


def test_missing_ref_is_a_clear_error(project: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    """It names the component, and what the repository does have (tilelang-ascend has no `main`)."""
    root, repos, url = project
    manifest = root / "stacks" / "demo.yaml"
    manifest.write_text(manifest.read_text().replace(f"{url}/lib, ref: main", f"{url}/lib, ref: v9"))
    code, _, err = run_cli(capsys, "--root", str(root), "lock", "demo")
    assert code == 1 and f"component lib: {url}/lib: no branch or tag named 'v9' (branches: main (default))" in err
    git("tag", "v1.0", cwd=repos / "lib")
    git("branch", "release", cwd=repos / "lib")
    code, _, err = run_cli(capsys, "--root", str(root), "lock", "demo")
    assert "no branch or tag named 'v9' (branches: main (default), release; tags: v1.0)" in err
    assert not (root / "lockfiles" / "demo.lock.json").exists()


def fake_upstream(tmp_path: Path, names: list[str]) -> Path:
    """Bare repositories standing in for public ones, under <tmp>/github/<org>/<repo>.git."""
    base = tmp_path / "github"
    for name in names:
        work = tmp_path / "work" / name
        make_repo(work, name)
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(work / ".git", base / f"{name}.git")
    return base


def upstream_8_5_0(tmp_path: Path) -> Path:
    """The upstream repositories of the 8.5.0 stack with upstream's refs and submodule paths:
    tilelang-ascend (default branch ascendc_pto, 3rdparty/tvm from https://github.com/TileLang/tvm.git),
    catlass (master, tag v1.6.3); the CUDA-only submodules the stack skips (and the HIP-only and
    test-only ones) are there too, at commits no mirror has."""
    github = fake_upstream(tmp_path, ["hicann/catlass"])
    cuda = tmp_path / "work" / "cuda-only"
    make_repo(cuda, "cuda")
    tvm = tmp_path / "work" / "TileLang" / "tvm"
    make_repo(tvm, "tvm")
    for path in ("cutlass", "cutlass_fpA_intB_gemm", "libflash_attn", "flashinfer", "composable_kernel"):
        add_submodule(tvm, f"file://{cuda}", f"3rdparty/{path}", f"https://github.com/gone/{path}.git")
    shutil.copytree(tvm / ".git", github / "TileLang" / "tvm.git")
    catlass = tmp_path / "work" / "hicann" / "catlass"
    add_submodule(catlass, f"file://{cuda}", "3rdparty/googletest", "https://gitcode.com/gone/googletest.git")
    shutil.rmtree(github / "hicann" / "catlass.git")
    shutil.copytree(catlass / ".git", github / "hicann" / "catlass.git")
    git("branch", "-m", "main", "master", cwd=github / "hicann" / "catlass.git")
    git("tag", "v1.6.3", "master", cwd=github / "hicann" / "catlass.git")
    work = tmp_path / "work" / "tile-ai" / "tilelang-ascend"
    make_repo(work, "tilelang-ascend")
    add_submodule(work, f"file://{github}/TileLang/tvm.git", "3rdparty/tvm", "https://github.com/TileLang/tvm.git")
    add_submodule(work, f"file://{cuda}", "3rdparty/cutlass", "https://github.com/gone/cutlass.git")
    add_submodule(work, f"file://{cuda}", "3rdparty/composable_kernel", "https://github.com/gone/composable_kernel")
    git("branch", "-m", "main", "ascendc_pto", cwd=work)
    shutil.copytree(work / ".git", github / "tile-ai" / "tilelang-ascend.git")
    return github


def without_system_packages(manifest_text: str) -> str:
    """The manifest without what apt resolves against its base: system packages and the compile cache's tool."""
    return re.sub(r"(?m)^ *((runtime_)?system_packages|compile_cache): .*\n", "", manifest_text)


UBUNTU_IMAGE = "ubuntu@sha256:0bced47fffa3361afa981854fcabcd4577cd43cebbb808cea2b1f33a3dd7f508"  # docker.io 22.04


def on_image(manifest_text: str, image: str = UBUNTU_IMAGE) -> str:
    """The manifest with its base replaced by an image (locking then bootstraps nothing)."""
    start, end = manifest_text.index("\nbase:") + 1, manifest_text.index("\n", manifest_text.index("keyring:")) + 1
    return manifest_text[:start] + f"base:\n  image: {image}\n" + manifest_text[end:]


# A known-bad combination (6.3.RC1 on 910B) whose components come from site: repositories.
SIX_LAYERS = ROOT / "tests" / "manifests" / "six-layers-6.3.RC1-910b.yaml"


def unanswering() -> str:
    """Site rewrites sending the other hosts the 8.5.0 stack names (the Python indexes) to loopback
    ports where nothing listens: a test never reaches the network."""
    hosts = ("https://download.pytorch.org/", "https://pypi.org/")
    return "".join(f"  - {{from: '{host}', to: 'http://127.0.0.1:{free_port()}/'}}\n" for host in hosts)


@pytest.mark.usefixtures("preflight_without_waits")
def test_real_8_5_0_stack_locks_with_the_vendor_host_unreachable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its packages' sha256 are pinned in the manifest: locking needs no vendor host at all (an
    air-gapped site fetches them at build time, or puts them in installer_dirs). What no host answers
    for here (PyTorch's CPU index) is left unresolved, one line each."""
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))
    github = upstream_8_5_0(tmp_path)
    root = tmp_path / "project"
    (root / "stacks").mkdir(parents=True)
    # On an image base (ubuntu:22.04, which no registry here serves), system packages resolve against
    # that image: the stack locks without them, and with them says what it needs in one line.
    text = on_image((ROOT / "stacks" / "8.5.0.yaml").read_text())
    (root / "stacks" / "8.5.0.yaml").write_text(without_system_packages(text))
    (root / "stacks" / "with-debs.yaml").write_text(text.replace("name: 8.5.0", "name: with-debs"))
    site = tmp_path / "site.yaml"
    site.write_text(
        "url_rewrites:\n"
        f"  - {{from: 'https://github.com/', to: 'file://{github}/'}}\n"
        f"  - {{from: 'https://ascend-repo.obs.cn-east-2.myhuaweicloud.com/', to: 'http://127.0.0.1:{free_port()}/'}}\n"
        + unanswering()
    )
    both = ["--arch", "x86_64", "--arch", "aarch64"]
    code, _, err = run_cli(capsys, "--root", str(root), "--site-config", str(site), "lock", "8.5.0", *both)
    assert code == 3 and sorted(incomplete_parts(err)) == [
        "aarch64 python packages of tilelang-ascend",
        "x86_64 python packages of tilelang-ascend",
    ], err
    code, _, err = run_cli(capsys, "--root", str(root), "--site-config", str(site), "lock", "with-debs")
    assert code != 0 and f"system packages are resolved against the base image {UBUNTU_IMAGE}: " in err
    assert [line for line in err.splitlines() if "error:" in line] == [err.strip().splitlines()[-1]]
    data = json.loads((root / "lockfiles" / "8.5.0.lock.json").read_text())
    sources = {c["id"]: c["source"] for c in data["components"]}
    assert {cid: src["ref"] for cid, src in sources.items()} == {
        "tilelang-ascend": "ascendc_pto",
        "catlass": "v1.6.3",
    }
    (tvm,) = sources["tilelang-ascend"]["submodules"]
    assert (tvm["path"], tvm["url"]) == ("3rdparty/tvm", "https://github.com/TileLang/tvm.git")
    assert tvm["commit"] == git("rev-parse", "HEAD", cwd=github / "TileLang" / "tvm.git")
    assert tvm["submodules"] == []  # the CUDA-only and HIP-only ones: skipped, as the manifest says
    assert sources["tilelang-ascend"]["skip_submodules"][-1] == "3rdparty/tvm/3rdparty/composable_kernel"
    assert sources["catlass"]["submodules"] == [] and sources["catlass"]["skip_submodules"] == ["3rdparty/googletest"]
    toolkit = next(p for p in data["architectures"]["x86_64"]["packages"] if p["role"] == "toolkit")
    assert toolkit["sha256"] == "5637d98ef0974dd7fe848e8e341d62ff36c89cf47e929114f6a628f32072251a"
    assert toolkit.get("size") is None  # not known without the file
    assert toolkit["url"].startswith("https://ascend-repo.obs.cn-east-2.myhuaweicloud.com/")  # not the rewrite
    sources = {c["id"]: c["source"] for c in data["components"]}
    assert sources["catlass"]["url"] == "https://github.com/hicann/catlass.git"
    assert len(sources["catlass"]["commit"]) == 40
    assert data["base"] == {
        "kind": "image",
        "image": "ubuntu@sha256:0bced47fffa3361afa981854fcabcd4577cd43cebbb808cea2b1f33a3dd7f508",
        "source_date_epoch": 1704067200,  # what the stages on it are dated to
    }
    assert all(section["base"] == {} for section in data["architectures"].values())
    # The shipped real stack renders for both architectures, and hadolint passes what it renders.
    for arch in ("x86_64", "aarch64"):
        out = tmp_path / "rendered" / arch
        args = ["--root", str(root), "--site-config", str(site), "render", "8.5.0", "--arch", arch, "-o", str(out)]
        assert run_cli(capsys, *args)[0] == 0
    files = sorted((tmp_path / "rendered").glob("*/*.Dockerfile"))
    assert len(files) == 2 * 7  # bases, toolkit, two components, the two finals
    lint = hadolint(files)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_63rc1_needs_site_repos_and_allow_unsupported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))
    served = b"cann 6.3.RC1 package bytes"

    def get(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(len(served)))
        h.end_headers()
        h.wfile.write(served)

    root = tmp_path / "project"
    (root / "stacks").mkdir(parents=True)
    text = on_image(SIX_LAYERS.read_text())  # locking bootstraps nothing
    (root / "stacks" / "6.3.RC1.yaml").write_text(without_system_packages(text))  # they need the image (see above)
    site = tmp_path / "site.yaml"
    site.write_text("repos: {}\n")
    code, _, err = run_cli(capsys, "--root", str(root), "--site-config", str(site), "lock", "6.3.RC1")
    assert code == 2 and "not a supported combination (pass --allow-unsupported" in err
    lock_allowed = ["--root", str(root), "--site-config", str(site), "lock", "6.3.RC1", "--allow-unsupported"]
    lock_allowed += ["--arch", "x86_64", "--arch", "aarch64"]
    repos = fake_upstream(tmp_path, ["team/ascend-c", "team/tilelang"])
    site.write_text(
        f"repos:\n  ascend-c: file://{repos}/team/ascend-c.git\n  tilelang: file://{repos}/team/tilelang.git\n"
    )
    code, _, err = run_cli(capsys, *lock_allowed)
    assert code == 2 and "needs repos.tilelang-compiler in the site configuration" in err  # bad input
    with http_server(get) as url:
        names = ["tilelang-compiler", "ascend-kernel", "runtime", "harness"]
        more = fake_upstream(tmp_path / "more", [f"team/{n}" for n in names])
        site.write_text(
            site.read_text()
            + "".join(f"  {n}: file://{more}/team/{n}.git\n" for n in names)
            + f"url_rewrites:\n  - {{from: 'https://ascend-repo.obs.cn-east-2.myhuaweicloud.com/', to: '{url}/'}}\n"
        )
        code, _, err = run_cli(capsys, *lock_allowed)
    assert code == 0, err
    data = json.loads((root / "lockfiles" / "6.3.RC1.lock.json").read_text())
    assert {p["sha256"] for s in data["architectures"].values() for p in s["packages"]} == {
        hashlib.sha256(served).hexdigest()
    }
    assert data["components"][0]["source"]["url"] == "site:ascend-c"
    for arch in ("x86_64", "aarch64"):  # it renders for both architectures, hadolint-clean
        out = tmp_path / "rendered" / arch
        args = ["--root", str(root), "--site-config", str(site), "render", "6.3.RC1", "--arch", arch, "-o", str(out)]
        assert run_cli(capsys, *args)[0] == 0
    files = sorted((tmp_path / "rendered").glob("*/*.Dockerfile"))
    lint = hadolint(files)
    assert len(files) == 2 * 11 and lint.returncode == 0, lint.stdout + lint.stderr


def test_committed_reference_lock_is_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CI drift check: the committed lock matches stacks/reference.yaml and its trees."""
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path))
    code, out, err = run_cli(capsys, "--root", str(ROOT), "lock", "--check", "reference")
    assert code == 0, err
    assert out.startswith("up to date")


def test_lock_check_names_each_locked_deb_its_mirror_no_longer_serves(tmp_path: Path) -> None:
    """The reference lock's .debs asked of a loopback stand-in of its mirror (a site rewrite), side by
    side: the two it no longer has are named, with whether the cache still holds them, in lock order."""
    from builder.lock.check import mirror_drift
    from builder.lock.resolver import Resolver
    from builder.lock.system import every_deb
    from builder.store.http import HttpClient

    locked = lock.io.read(ROOT / "lockfiles" / "reference.lock.json")
    listed = [(a, d) for a, section in locked.architectures.items() for d in every_deb(section.system)]
    debs = [d for _, d in listed]
    own = next(d for d in debs if d.architecture != "all")  # one architecture's .deb, kept in the cache
    shared = next(d for d in debs if d.architecture == "all" and sum(e.path == d.path for e in debs) > 1)
    gone = {own.path, shared.path}
    asked: list[str] = []

    def head(h: http.server.BaseHTTPRequestHandler) -> None:
        asked.append(urllib.parse.unquote(h.path))
        h.send_response(404 if asked[-1].removeprefix("/debian/") in gone else 200)
        h.send_header("Content-Length", "0")
        h.end_headers()

    cache = Cache(tmp_path / "cache")
    cache.blob(own.sha256).parent.mkdir(parents=True)
    cache.blob(own.sha256).write_bytes(b"kept from an earlier build")  # has() looks for the blob only
    with http_server(head, head) as url:
        site = SiteConfig.model_validate({"url_rewrites": [{"from": "http://deb.debian.org/", "to": f"{url}/"}]})
        notes = mirror_drift(locked, Resolver(ROOT / "stacks", site, cache, HttpClient(), print))
    assert sorted(asked) == sorted(f"/debian/{d.path}" for d in debs)  # each asked of the mirror it was rewritten to
    kept = {own.sha256}
    assert notes == [
        f"{a} system package {d.name} {d.version}: gone from http://deb.debian.org/debian "
        f"({'in the cache' if d.sha256 in kept else 'NOT in the cache'})"
        for a, d in listed
        if d.path in gone
    ]
    assert len(notes) == sum(d.path in gone for d in debs) >= 3  # the shared one in each section locking it


AIRGAP = """schema: 1
name: airgap
toolkit:
  vendor: huawei
  version: 8.5.0
  chip: 910b
  packages:
    toolkit:
      x86_64:
        file: Ascend-cann-toolkit_8.5.0_linux-x86_64.run
        url: https://vendor.example/x86/Ascend-cann-toolkit_8.5.0_linux-x86_64.run
      aarch64:
        file: Ascend-cann-toolkit_8.5.0_linux-aarch64.run
        url: https://vendor.example/arm/Ascend-cann-toolkit_8.5.0_linux-aarch64.run
    ops:
      x86_64:
        file: Ascend-cann-910b-ops_8.5.0_linux-x86_64.run
        url: https://vendor.example/x86/Ascend-cann-910b-ops_8.5.0_linux-x86_64.run
        sha256: "SHA"
      aarch64:
        file: Ascend-cann-910b-ops_8.5.0_linux-aarch64.run
        url: https://vendor.example/arm/Ascend-cann-910b-ops_8.5.0_linux-aarch64.run
host: {driver: 25.5.0}
platform: {os: ubuntu, os_version: "22.04", python: "3.10", architectures: [x86_64, aarch64]}
base: {image: "ubuntu@sha256:0bced47fffa3361afa981854fcabcd4577cd43cebbb808cea2b1f33a3dd7f508"}
components:
  - {id: app, source: {path: app}}
smoke: {command: "true", expect: ""}
"""


def test_the_vendors_referer_reaches_its_host_and_a_site_header_only_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Huawei's packages are fetched with the Referer its own downloader sends (a host that refuses
    requests without it serves them); a header the site gives one host reaches that host only."""
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))
    seen: dict[str, list[dict[str, str]]] = {"vendor": [], "mirror": []}

    def refusing_without(name: str, needed: dict[str, str]) -> Callable[[http.server.BaseHTTPRequestHandler], None]:
        def get(h: http.server.BaseHTTPRequestHandler) -> None:
            seen[name].append(dict(h.headers))
            ok = all(h.headers.get(k) == v for k, v in needed.items())
            body = f"{name} package".encode() if ok else b""
            h.send_response(200 if ok else 403)
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(body)

        return get

    root = tmp_path / "project"
    (root / "stacks" / "app").mkdir(parents=True)
    (root / "stacks" / "airgap.yaml").write_text(AIRGAP.replace('        sha256: "SHA"\n', ""))
    site = tmp_path / "site.yaml"
    referer = {"Referer": "https://www.hiascend.com/"}
    with (
        http_server(refusing_without("vendor", referer)) as vendor,
        http_server(refusing_without("mirror", {"X-Team": "npu"})) as mirror,
    ):
        site.write_text(
            f"url_rewrites:\n  - {{from: 'https://vendor.example/x86/', to: '{vendor}/'}}\n"
            f"  - {{from: 'https://vendor.example/arm/', to: '{mirror}/'}}\n"
            f"headers:\n  '{mirror.removeprefix('http://')}': {{X-Team: npu}}\n"
        )
        args = ["--root", str(root), "--site-config", str(site), "lock", "airgap", "--allow-unsupported"]
        code, _, err = run_cli(capsys, *args, "--arch", "x86_64", "--arch", "aarch64")
    assert code == 0, err
    data = json.loads((root / "lockfiles" / "airgap.lock.json").read_text())
    assert {p["sha256"] for p in data["architectures"]["x86_64"]["packages"]} == {
        hashlib.sha256(b"vendor package").hexdigest()
    }
    assert seen["vendor"] and all(r.get("Referer") == referer["Referer"] and "X-Team" not in r for r in seen["vendor"])
    assert seen["mirror"] and all(r.get("X-Team") == "npu" for r in seen["mirror"])


def test_lock_arch_file_rewrites_and_installer_dirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--arch resolves that architecture only; a package without a pin is downloaded whole through a
    file:// rewrite; a wrong-sha256 copy in installer_dirs is named, never skipped for a download."""
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))
    mirror = tmp_path / "mirror"
    (mirror / "x86").mkdir(parents=True)
    toolkit = mirror / "x86" / "Ascend-cann-toolkit_8.5.0_linux-x86_64.run"
    toolkit.write_bytes(b"toolkit bytes")
    ops_pin = hashlib.sha256(b"ops bytes").hexdigest()
    root = tmp_path / "project"
    (root / "stacks" / "app").mkdir(parents=True)
    (root / "stacks" / "airgap.yaml").write_text(AIRGAP.replace("SHA", ops_pin))
    dirs = tmp_path / "installers"
    dirs.mkdir()
    site = tmp_path / "site.yaml"
    site.write_text(
        f"url_rewrites: [{{from: 'https://vendor.example/', to: 'file://{mirror}/'}}]\ninstaller_dirs: [{dirs}]\n"
    )
    args = [
        "--root",
        str(root),
        "--site-config",
        str(site),
        "lock",
        "airgap",
        "--arch",
        "x86_64",
        "--allow-unsupported",
    ]
    code, _, err = run_cli(capsys, *args)
    assert code == 0, err  # the aarch64 toolkit exists nowhere: --arch x86_64 never asks for it
    data = json.loads((root / "lockfiles" / "airgap.lock.json").read_text())
    x86 = {p["role"]: p for p in data["architectures"]["x86_64"]["packages"]}
    assert x86["toolkit"]["sha256"] == hashlib.sha256(b"toolkit bytes").hexdigest()  # downloaded and hashed
    assert x86["toolkit"]["size"] == len(b"toolkit bytes")
    assert x86["ops"]["sha256"] == ops_pin  # pinned: taken as is, nothing fetched
    assert data["architectures"]["aarch64"]["packages"] == []
    (dirs / "Ascend-cann-910b-ops_8.5.0_linux-x86_64.run").write_bytes(b"a corrupt copy")
    code, _, err = run_cli(capsys, *args)
    wrong = hashlib.sha256(b"a corrupt copy").hexdigest()
    assert code != 0
    assert f"Ascend-cann-910b-ops_8.5.0_linux-x86_64.run: {dirs}/Ascend-cann-910b-ops_8.5.0_linux-x86_64.run " in err
    assert f"has sha256 {wrong}, the manifest pins {ops_pin}: replace the file or fix the pin" in err


def test_build_without_a_lock_says_every_step_still_needed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "project"
    (root / "stacks").mkdir(parents=True)
    shutil.copy(SIX_LAYERS, root / "stacks" / "6.3.RC1.yaml")
    site = tmp_path / "site.yaml"
    site.write_text("repos: {ascend-c: 'file:///srv/ascend-c.git'}\n")
    base = ["--root", str(root), "--site-config", str(site), "build", "6.3.RC1"]
    code, out, err = run_cli(capsys, *base)
    # The fatal alone, first, with the supported alternative from the catalog.
    assert code != 0 and out == ""
    first = err.splitlines()[0]
    assert first.startswith("compat: error: CANN 6.3.RC1 does not support chip 910b: it is released for 310p only")
    assert first.endswith("for 910b, start from a release that has it: `stackbuild new 9.0.0 --chip 910b`")
    assert "cannot be built yet" not in err
    code, out, err = run_cli(capsys, *base, "--allow-unsupported")
    assert code != 0 and out == ""
    assert "6.3.RC1 cannot be built yet; still needed:\n" in err
    for n, name in enumerate(["tilelang", "tilelang-compiler", "ascend-kernel", "runtime", "harness"], start=1):
        assert f"  {n}. add repos.{name} (component {name}'s repository) to the site configuration ({site})" in err
    assert "  6. " not in err
    code, _, err = run_cli(capsys, *base, "--frozen", "--allow-unsupported")
    assert code != 0 and "no lock, and --frozen builds only from one: run `stackbuild lock 6.3.RC1`" in err
    code, _, err = run_cli(capsys, "--root", str(root), "render", "6.3.RC1")
    assert code != 0 and "no lockfile: run `stackbuild lock 6.3.RC1`" in err
    assert not (root / "lockfiles").exists()


class RecordingSession:
    """nox's session as `nox -s build-stack` gives it: the preflight run in-process at root, the host
    setup (what it would install) and the build itself only recorded."""

    def __init__(self, root: Path, posargs: list[str]) -> None:
        self.root, self.posargs = root, posargs
        self.host_setup, self.builds = list[list[str]](), list[list[str]]()

    def install(self, *args: str) -> None:
        pass

    def log(self, *args: object) -> None:
        pass

    def run(self, *args: str) -> None:
        if args[:3] == ("python", "-m", "builder.hostsetup"):
            self.host_setup.append(list(args[3:]))
        elif "--preflight" not in args:
            self.builds.append(list(args[1:]))
        elif (code := main(["--root", str(self.root), *args[1:]])) != 0:
            raise nox.command.CommandFailed(f"Returned code {code}", return_code=code)


def test_build_stack_puts_an_unsupported_combination_before_any_host_setup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = importlib.util.spec_from_file_location("noxfile", ROOT / "noxfile.py")
    assert spec is not None and spec.loader is not None
    noxfile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(noxfile)
    root = tmp_path / "fresh"  # a fresh checkout with a stack of a known-bad combination, no lock for it
    (root / "stacks").mkdir(parents=True)
    shutil.copy(SIX_LAYERS, root / "stacks" / "6.3.RC1.yaml")
    session = RecordingSession(root, ["6.3.RC1"])
    with pytest.raises(nox.command.CommandFailed):
        noxfile.build_stack(session)
    assert session.host_setup == [] and session.builds == []  # nothing installed on the host
    err = capsys.readouterr().err
    assert err.startswith("compat: error: CANN 6.3.RC1 does not support chip 910b"), err
    assert "`stackbuild new 9.0.0 --chip 910b`" in err.splitlines()[0]
    shutil.copy(ROOT / "stacks" / "reference.yaml", root / "stacks")
    shutil.copytree(ROOT / "stacks" / "reference", root / "stacks" / "reference")
    (root / "lockfiles").mkdir()
    shutil.copy(ROOT / "lockfiles" / "reference.lock.json", root / "lockfiles")
    session = RecordingSession(root, ["reference", "--no-smoke"])
    noxfile.build_stack(session)
    assert session.host_setup == [["--docker"]] and session.builds == [["build", "reference", "--no-smoke"]]
    assert "preflight: reference can be built here once the host is set up" in capsys.readouterr().out


@pytest.mark.usefixtures("preflight_without_waits")
def test_an_official_cann_image_as_base_with_the_toolkit_preinstalled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """FROM an official CANN image (as catlass's Dockerfile.atlasa2 does): nothing installed, the
    toolkit stage checks the image's version files against the lock."""
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))
    github = upstream_8_5_0(tmp_path)
    text = without_system_packages((ROOT / "stacks" / "8.5.0.yaml").read_text())
    start, end = text.index("  packages:\n"), text.index("host:")
    text = text[:start] + "  preinstalled: true\n" + text[end:]
    official = "quay.io/ascend/cann@sha256:" + "ab" * 32  # stands in for cann:8.5.0-910b-ubuntu22.04-py3.11
    text = on_image(text, official)
    text = text.replace('  python: "3.10"\n', '  python: "3.11"\n  python_from: base\n')
    root = tmp_path / "project"
    (root / "stacks").mkdir(parents=True)
    (root / "stacks" / "8.5.0.yaml").write_text(text)
    site = tmp_path / "site.yaml"
    site.write_text(f"url_rewrites:\n  - {{from: 'https://github.com/', to: 'file://{github}/'}}\n" + unanswering())
    base = ["--root", str(root), "--site-config", str(site)]
    assert run_cli(capsys, *base, "check", "8.5.0")[0] == 0
    code, _, err = run_cli(capsys, *base, "lock", "8.5.0", "--arch", "x86_64", "--arch", "aarch64")
    assert code == 3 and len(incomplete_parts(err)) == 2, err  # the CPU index, once for each architecture
    data = json.loads((root / "lockfiles" / "8.5.0.lock.json").read_text())
    assert all(section["packages"] == [] for section in data["architectures"].values())
    out = tmp_path / "rendered"
    assert run_cli(capsys, *base, "render", "8.5.0", "--arch", "aarch64", "-o", str(out))[0] == 0
    toolkit = (out / "toolkit.Dockerfile").read_text()
    assert "COPY packages/" not in toolkit and "--install" not in toolkit
    assert 'if [ "$found" != "8.5.0" ]' in toolkit  # the image's version files must say the locked version
    assert f"FROM {official}" in (out / "base-devel.Dockerfile").read_text()
    lint = hadolint(sorted(out.glob("*.Dockerfile")))
    assert lint.returncode == 0, lint.stdout + lint.stderr
    bad = text.replace(
        "  preinstalled: true\n", "  preinstalled: true\n  packages: {toolkit: {x86_64: {file: a.run, generate: x}}}\n"
    )
    (root / "stacks" / "8.5.0.yaml").write_text(bad)
    code, _, err = run_cli(capsys, *base, "validate", str(root / "stacks" / "8.5.0.yaml"))
    assert code == 2 and "toolkit.packages: the toolkit is preinstalled in the base image: give no packages" in err


def test_the_committed_8_5_0_lock_pins_upstreams_commits_and_renders_hadolint_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """lockfiles/8.5.0.lock.json was made against mirrors of the real repositories (docs/manifest.md): it agrees
    with its manifest, and renders offline from an empty cache for both architectures. What no machine
    here reached is recorded unresolved, never pinned by guess: Ubuntu's arm64 archive
    (ports.ubuntu.com), PyTorch's CPU index."""
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))
    data = json.loads((ROOT / "lockfiles" / "8.5.0.lock.json").read_text())
    commits = {c["id"]: (c["source"]["ref"], c["source"]["commit"]) for c in data["components"]}
    assert commits == {  # from the upstream repositories, by hand; asc-devkit: the toolkit's
        "tilelang-ascend": ("ascendc_pto", "95acbd7f7283f57f228aa4d016742ea165c03b84"),
        "catlass": ("v1.6.3", "0c1b33a001cfaacefd1de2a1a94bfe540747c538"),
    }
    tilelang = next(c["source"] for c in data["components"] if c["id"] == "tilelang-ascend")
    tvm = next(s for s in tilelang["submodules"] if s["path"] == "3rdparty/tvm")
    assert tvm["url"] == "https://github.com/TileLang/tvm"
    assert tvm["commit"] == "c2921fdaf795b1103d21abc962e83a209c7258d7"
    unresolved = {(u["kind"], u.get("arch"), u["url"]) for u in data["unresolved"]}
    assert unresolved == {
        ("base", "aarch64", "http://ports.ubuntu.com/ubuntu-ports"),
        ("python", "x86_64", "https://download.pytorch.org/whl/cpu"),
        ("python", "aarch64", "https://download.pytorch.org/whl/cpu"),
    }
    assert "asc-devkit" not in json.dumps(data) and not any(c.get("fetched") for c in data["components"])
    x86 = data["architectures"]["x86_64"]
    assert not x86["python"] and not data["architectures"]["aarch64"]["base"]
    # -security's libssl3 (3.0.2-0ubuntu1.N), not the release pocket's 3.0.2-0ubuntu1
    (libssl,) = [d["version"] for d in x86["system"]["stack"] if d["name"] == "libssl3"]
    assert libssl.startswith("3.0.2-0ubuntu1.")
    for arch in ("x86_64", "aarch64"):
        out = tmp_path / "rendered" / arch
        code, _, err = run_cli(capsys, "--root", str(ROOT), "render", "8.5.0", "--arch", arch, "-o", str(out))
        assert code == 0 and f"note: unresolved in the lock of 8.5.0 for {arch}" in err, err
        lint = hadolint(sorted(out.glob("*.Dockerfile")))
        assert lint.returncode == 0, lint.stdout + lint.stderr
    assert not list((tmp_path / "rendered").glob("*/asc-devkit*"))


FETCHING = """schema: 1
name: fetching
toolkit:
  vendor: cpusim
  version: 8.3.RC1
  chip: 910b
  packages:
    toolkit:
      x86_64:
        file: tk.run
        generate: "printf 'toolkit-v1' > {output_dir}/tk.run"
host: {driver: none}
platform: {os: debian, os_version: "12", python: "3.11", architectures: [x86_64]}
base:
  image: debian@sha256:1111111111111111111111111111111111111111111111111111111111111111
components:
  - id: app
    source: {path: app}
    fetch:
      - {url: URL/include.zip, to: third_party/json/include.zip}
smoke: {command: "true", expect: ""}
"""


def test_a_fetch_input_is_locked_cached_and_placed_in_the_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))
    payload = b"a third-party archive"
    served = [payload]
    serve = serving_bytes(lambda: served[0])

    root = tmp_path / "project"
    (root / "stacks" / "app").mkdir(parents=True)
    (root / "stacks" / "app" / "main.py").write_text("print('v1')\n")
    path = root / "stacks" / "fetching.yaml"
    lock_file = root / "lockfiles" / "fetching.lock.json"
    with http_server(serve) as url:
        path.write_text(FETCHING.replace("URL", url))
        code, _, err = run_cli(capsys, "--root", str(root), "lock", "fetching")
        assert code == 0, err
        # A wrong pin: one line naming the component and the file.
        wrong = FETCHING.replace("URL", url).replace("to: third_party", f"sha256: '{'0' * 64}', to: third_party")
        (root / "stacks" / "wrong.yaml").write_text(wrong.replace("name: fetching", "name: wrong"))
        code, _, err = run_cli(capsys, "--root", str(root), "lock", "wrong")
        # Relocked on a machine without the file while the URL serves other bytes: the lock's pin holds.
        served[0] = b"other bytes"
        monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "another-cache"))
        moved = run_cli(capsys, "--root", str(root), "lock", "fetching")
        monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))
    assert moved[0] != 0 and f"expected {hashlib.sha256(payload).hexdigest()}" in moved[2], moved
    lines = [line for line in err.splitlines() if "error:" in line]
    assert code != 0 and len(lines) == 1 and "component app: fetch third_party/json/include.zip: " in lines[0], err
    assert "sha256" in lines[0] and "0" * 64 in lines[0], err
    sha = hashlib.sha256(payload).hexdigest()
    fetched = json.loads(lock_file.read_text())["components"][0]["fetched"]
    assert fetched == [{"url": f"{url}/include.zip", "to": "third_party/json/include.zip", "sha256": sha, "size": 21}]
    cache = Cache(tmp_path / "cache")
    assert cache.has(sha)

    # In the component's context at its place in the source tree, from the cache (the server is gone).
    request = Request(manifest.load(path), path, lock.read(lock_file), SiteConfig(), cache, Arch.X86_64)
    stage = chain.plan(request, print).stages["app"]
    written = context_files(stage.dockerfile, stage.context, cache)
    assert written["src/third_party/json/include.zip"] == payload
    assert "src/main.py" in written

    # An unreachable URL: one line naming the component, the file and where it was looked for.
    (root / "stacks" / "gone.yaml").write_text(
        FETCHING.replace("URL", f"file://{tmp_path}/nowhere").replace("name: fetching", "name: gone")
    )
    code, _, err = run_cli(capsys, "--root", str(root), "lock", "gone")
    lines = [line for line in err.splitlines() if "error:" in line]
    assert code != 0 and len(lines) == 1, err
    assert "component app: fetch third_party/json/include.zip: include.zip is in no installer_dirs" in lines[0]
    assert "cannot be downloaded" in lines[0], err


def test_every_command_that_builds_refuses_an_unresolved_lock_before_anything_runs(tmp_path: Path) -> None:
    """build through its preflight, publish through the chain's destination: an unresolved lock is named
    before an engine or a registry is asked."""
    from builder.cli import build_parser
    from builder.cli.building import preflight
    from builder.cli.context import Context
    from builder.cli.declare import parsed
    from builder.cli.image_commands import PublishArgs
    from builder.cli.stack_commands import BuildArgs
    from builder.model.settings import Settings

    root = tmp_path / "project"
    shutil.copytree(ROOT / "stacks", root / "stacks", ignore=shutil.ignore_patterns("reference"))
    (root / "lockfiles").mkdir()
    shutil.copy(ROOT / "lockfiles" / "8.5.0.lock.json", root / "lockfiles")
    ctx = Context(root=root, debug=False, settings=Settings(tmp_path / "cache", None, Path("/")))
    build = parsed(BuildArgs, build_parser().parse_args(["build", "8.5.0"]))
    publish = parsed(PublishArgs, build_parser().parse_args(["publish", "8.5.0", "--registry", "127.0.0.1:9/team"]))
    unresolved = r"x86_64 python packages of tilelang-ascend \(https://download"
    with pytest.raises(Unreached, match=unresolved):
        preflight(ctx, build.stack, False, frozen=True, arch=Arch.X86_64)
    with pytest.raises(Unreached, match=unresolved):  # port 9 answers nothing: the registry was never asked
        chain.destination([ctx.request(publish.stack, Arch.X86_64)], publish.registry, publish.alias)
    complete = lock.read(root / "lockfiles" / "8.5.0.lock.json").model_copy(update={"unresolved": []})
    lock.write(complete.sealed(), root / "lockfiles" / "8.5.0.lock.json")
    assert preflight(ctx, build.stack, False, frozen=True, arch=Arch.X86_64) is True


def test_a_base_drift_names_its_cause_mirror_or_bytes() -> None:
    """A bootstrap that differs from the lock's is blamed on the mirror only when package versions
    differ; the same versions in other bytes say so (it read "0 package versions differ, e.g. ")."""
    from builder.inputs.bootstrap import BaseTarball
    from builder.lock.locked import LockedTarball
    from builder.plan.prepare import _drift_message

    locked = LockedTarball(sha256="a" * 64, packages={"bash": "5.2.15-2", "dpkg": "1.21.22"})
    moved = _drift_message("devel", BaseTarball("b" * 64, {"bash": "5.2.15-2", "dpkg": "1.21.23"}), locked, "ref")
    assert "the Debian mirror moved on: 1 package versions differ, e.g. dpkg)" in moved
    same = _drift_message("devel", BaseTarball("b" * 64, dict(locked.packages)), locked, "ref")
    assert "mirror moved on" not in same
    assert "the same 2 package versions in other bytes: a site rewrite of the mirror" in same
    assert same.endswith("relock with `stackbuild lock ref`")
