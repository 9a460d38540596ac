"""System and Python packages resolved for a base and an architecture, without Docker: the
host's apt against a repository the test makes, pip against a wheelhouse the test makes."""

from __future__ import annotations

import hashlib
import http.server
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote

import pytest
from packaging.utils import canonicalize_name, parse_wheel_filename

from builder import manifest as manifests
from builder.inputs import debs, wheels
from builder.lock.system import sources
from builder.model.arch import Arch
from builder.model.retry import RetryPolicy
from builder.store.cache import Cache
from builder.store.http import HttpClient
from tests.conftest import ROOT
from tests.debrepo import make_deb, serve, write_index
from tests.fake_engine import FakeEngine
from tests.helpers import http_server
from tests.wheelhouse import make_wheel

needs_apt = pytest.mark.skipif(
    shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None, reason="needs apt-get and dpkg-deb (Debian)"
)
STATUS = b"Package: base-files\nStatus: install ok installed\nVersion: 12.4\nArchitecture: amd64\n\n"


@needs_apt
def test_the_closure_is_what_the_base_lacks_in_install_order_pinned_by_sha256(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_deb(repo / "pool", "sbdemo-lib", "1.0")
    make_deb(repo / "pool", "sbdemo-tool", "1.0", depends=["sbdemo-lib (>= 1.0)", "base-files"])
    make_deb(repo / "pool", "sbdemo-native", "2.0", arch="arm64")
    write_index(repo)
    cache = Cache(tmp_path / "cache")
    base = debs.BaseRoot(STATUS, (), ())
    with serve(repo) as url:
        source = debs.AptSource("http://repo.example/debian", "stable", ("main",), trusted=True)
        rewrite = lambda u: u.replace("http://repo.example/debian", url)  # noqa: E731 - a site rewrite
        found = debs.resolve(base, [source], [("tool", ["sbdemo-tool"])], Arch.X86_64, rewrite, cache)
        native = debs.resolve(base, [source], [("n", ["sbdemo-native"])], Arch.AARCH64, rewrite, cache)
        with pytest.raises(debs.SystemPackageError, match="Unable to locate package sbdemo-native"):
            debs.resolve(base, [source], [("n", ["sbdemo-native"])], Arch.X86_64, rewrite, cache)
        tool = found["tool"]
        assert [(d.name, d.version, d.architecture) for d in tool] == [
            ("sbdemo-lib", "1.0", "all"),
            ("sbdemo-tool", "1.0", "all"),
        ]
        assert all(d.repository == "http://repo.example/debian" for d in tool)  # as written, not as rewritten
        for deb in tool:
            assert deb.sha256 == hashlib.sha256((repo / deb.path).read_bytes()).hexdigest()
        assert [d.name for d in native["n"]] == ["sbdemo-native"]
        got = debs.fetch(tool[0], cache, [], [url], HttpClient())
    assert got == tool[0].sha256 and cache.has(got)
    assert debs.fetch(tool[1], cache, [], ["http://127.0.0.1:9"], HttpClient(RetryPolicy(attempts=1))) is None


def test_an_image_bases_apt_state_is_read_through_the_engine_one_line_and_deb822_sources() -> None:
    image = "ubuntu@sha256:" + "0" * 64
    engine = FakeEngine(
        image_files={
            image: {
                "/var/lib/dpkg/status": STATUS,
                "/etc/apt/sources.list": (
                    b"# comment\ndeb [arch=amd64 signed-by=/k.gpg] http://a.example/ubuntu jammy main universe\n"
                ),
                "/etc/apt/sources.list.d/ubuntu.sources": (
                    b"Types: deb deb-src\nURIs: http://b.example/ubuntu\nSuites: noble noble-updates\n"
                    b"Components: main\nSigned-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg\n\n"
                    b"Types: deb\nURIs: http://c.example\nSuites: x\nEnabled: no\n"
                ),
                "/usr/share/keyrings/ubuntu-archive-keyring.gpg": b"key",
                "/usr/share/keyrings/unrelated.gpg": b"other",
                "/etc/apt/trusted.gpg.d/local.asc": b"asc",
            }
        }
    )
    root = debs.base_root(debs.BaseRef(image=image), Arch.AARCH64, lambda: engine)
    assert root.status == STATUS
    assert [(s.url, s.suite, s.components) for s in root.sources] == [
        ("http://a.example/ubuntu", "jammy", ("main", "universe")),
        ("http://b.example/ubuntu", "noble", ("main",)),
        ("http://b.example/ubuntu", "noble-updates", ("main",)),
    ]
    assert dict(root.keys) == {"local.asc": b"asc", "ubuntu-archive-keyring.gpg": b"key"}


def test_python_packages_resolve_per_architecture_for_the_stacks_python(tmp_path: Path) -> None:
    house = tmp_path / "wheels"
    make_wheel(house, "sbwheel", "1.0", "cp311-cp311-manylinux_2_17_x86_64", requires=["sbdep>=2.0"])
    make_wheel(house, "sbwheel", "0.9", "cp311-cp311-manylinux_2_28_aarch64", requires=["sbdep>=2.0"])
    make_wheel(house, "sbwheel", "1.1", "cp312-cp312-manylinux_2_17_x86_64")  # another Python: not for 3.11
    make_wheel(house, "sbdep", "2.0")
    cache = Cache(tmp_path / "cache")
    pins = {
        arch: wheels.resolve(["sbwheel"], str(house), tmp_path, wheels.Target.of("3.11", arch, "debian", "12"), cache)
        for arch in Arch
    }
    assert [(w.name, w.version) for w in pins[Arch.X86_64]] == [("sbdep", "2.0"), ("sbwheel", "1.0")]
    assert [(w.name, w.version) for w in pins[Arch.AARCH64]] == [("sbdep", "2.0"), ("sbwheel", "0.9")]
    assert all(cache.has(w.sha256) for found in pins.values() for w in found)
    old_glibc = wheels.Target.of("3.11", Arch.AARCH64, "ubuntu", "18.04")  # manylinux2014 at most: no 2_28 wheel
    with pytest.raises(
        wheels.PythonPackageError, match="Could not find a version that satisfies the requirement sbwheel"
    ):
        wheels.resolve(["sbwheel"], str(house), tmp_path, old_glibc, cache)
    # A build elsewhere downloads exactly the pinned files again (hash-checked by pip).
    again = Cache(tmp_path / "other-cache")
    wheels.fetch(
        pins[Arch.AARCH64], str(house), tmp_path, wheels.Target.of("3.11", Arch.AARCH64, "debian", "12"), again
    )
    assert all(again.has(w.sha256) for w in pins[Arch.AARCH64])
    assert wheels.requirements_text(pins[Arch.X86_64]).splitlines()[1].startswith("sbwheel==1.0 --hash=sha256:")


@needs_apt
def test_a_local_file_repository_locks_like_a_served_one(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_deb(repo / "pool", "sbdemo-lib", "1.0")
    write_index(repo)
    source = debs.AptSource(f"file://{repo}", "stable", ("main",), trusted=True)
    found = debs.resolve(
        debs.BaseRoot(STATUS, (), ()), [source], [("x", ["sbdemo-lib"])], Arch.X86_64, str, Cache(tmp_path / "c")
    )
    assert [(d.name, d.repository, d.path) for d in found["x"]] == [
        ("sbdemo-lib", f"file://{repo}", "pool/sbdemo-lib_1.0_all.deb")
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("deb https://user:s3cret@artifactory.example/debian bookworm main", "with credentials"),
        ("deb mirror+http://mirrors.example/list.txt bookworm main", "only http, https and file sources"),
    ],
)
def test_a_base_source_that_cannot_be_locked_is_one_clear_line_without_its_secret(line: str, message: str) -> None:
    with pytest.raises(debs.SystemPackageError, match=message) as raised:
        debs.root_from_files({"/etc/apt/sources.list": line.encode()})
    assert "s3cret" not in str(raised.value) and "\n" not in str(raised.value)


def test_locked_wheel_names_and_versions_cannot_become_pip_options() -> None:
    from pydantic import ValidationError

    from builder.lock.locked import LockedWheel

    for name, version in (("--find-links=http://x", "1.0"), ("ok", "1.0 -r /etc/passwd"), ("-r", "1")):
        with pytest.raises(ValidationError):
            LockedWheel(name=name, version=version, file="ok-1.0-py3-none-any.whl", sha256="0" * 64)


def test_a_lock_of_both_architectures_pins_each_its_own_wheels(tmp_path: Path) -> None:
    """Through the resolver (bases and apt stand-ins): the same requirement, a wheel per architecture."""
    from builder import manifest
    from builder.inputs import bootstrap
    from builder.inputs.site import SiteConfig
    from builder.lock.resolve import resolve
    from builder.lock.resolver import Resolver
    from tests.conftest import ROOT

    house = tmp_path / "stacks" / "wheels"
    make_wheel(house, "sbwheel", "1.0", "py3-none-manylinux2014_x86_64")
    make_wheel(house, "sbwheel", "0.9", "py3-none-manylinux2014_aarch64")
    shutil.copy(next((ROOT / "stacks" / "reference" / "wheelhouse").glob("*.whl")), house)
    text = (ROOT / "stacks" / "reference.yaml").read_text()
    text = text.replace("python_index: reference/wheelhouse", "python_index: wheels")
    text = text.replace("python_packages: [simreport==1.0]", "python_packages: [simreport==1.0, sbwheel]")
    shutil.copytree(
        ROOT / "stacks" / "reference", tmp_path / "stacks" / "reference", ignore=shutil.ignore_patterns("build")
    )
    (tmp_path / "stacks" / "m.yaml").write_text(text)
    cache = Cache(tmp_path / "cache")

    def no_base(*_: object, **__: object) -> bootstrap.BaseTarball:
        return bootstrap.BaseTarball("0" * 64, {})

    def no_debs(*_: object) -> dict[str, list[debs.Deb]]:
        return {}

    resolver = Resolver(tmp_path / "stacks", SiteConfig(), cache, HttpClient(), lambda _: None, no_base, no_debs)
    locked = resolve(manifest.load(tmp_path / "stacks" / "m.yaml"), resolver, [Arch.X86_64, Arch.AARCH64])
    pins = {arch: {w.name: w.version for w in s.python["harness"]} for arch, s in locked.architectures.items()}
    assert pins == {
        Arch.X86_64: {"sbwheel": "1.0", "simreport": "1.0"},
        Arch.AARCH64: {"sbwheel": "0.9", "simreport": "1.0"},
    }


def test_a_lock_from_several_indexes_records_each_wheels_index(tmp_path: Path) -> None:
    """python_index as a list (wheelhouse directories here): a project from the first that has it, even
    when a later one has it newer; the lock names the index beside each pin."""
    from builder import manifest
    from builder.inputs import bootstrap
    from builder.inputs.site import SiteConfig
    from builder.lock import io as lock_io
    from builder.lock.resolve import resolve
    from builder.lock.resolver import Resolver

    make_wheel(tmp_path / "stacks" / "first", "sbwheel", "1.0")
    make_wheel(tmp_path / "stacks" / "wheels", "sbwheel", "2.0")
    shutil.copy(next((ROOT / "stacks" / "reference" / "wheelhouse").glob("*.whl")), tmp_path / "stacks" / "wheels")
    text = (ROOT / "stacks" / "reference.yaml").read_text()
    text = text.replace("python_index: reference/wheelhouse", "python_index: [first, wheels]")
    text = text.replace("python_packages: [simreport==1.0]", "python_packages: [simreport==1.0, sbwheel]")
    shutil.copytree(
        ROOT / "stacks" / "reference", tmp_path / "stacks" / "reference", ignore=shutil.ignore_patterns("build")
    )
    (tmp_path / "stacks" / "m.yaml").write_text(text)
    resolver = Resolver(
        tmp_path / "stacks",
        SiteConfig(),
        Cache(tmp_path / "cache"),
        HttpClient(),
        lambda _: None,
        lambda *_, **__: bootstrap.BaseTarball("0" * 64, {}),
        lambda *_: {},
    )
    locked = resolve(manifest.load(tmp_path / "stacks" / "m.yaml"), resolver, [Arch.X86_64])
    pins = {w.name: (w.version, w.index) for w in locked.architectures[Arch.X86_64].python["harness"]}
    assert pins == {"sbwheel": ("1.0", "first"), "simreport": ("1.0", "wheels")}
    written = json.loads(lock_io.text(locked))["architectures"]["x86_64"]["python"]["harness"]
    assert [w["index"] for w in written] == ["first", "wheels"]


def test_an_apt_repository_has_an_architectures_own_url() -> None:
    """8.5.0's -updates and -security: archive.ubuntu.com for x86_64, ports.ubuntu.com for arm64."""
    stack = manifests.load(ROOT / "stacks" / "8.5.0.yaml")
    for arch, url in (
        (Arch.X86_64, "http://archive.ubuntu.com/ubuntu"),
        (Arch.AARCH64, "http://ports.ubuntu.com/ubuntu-ports"),
    ):
        assert [(s.url, s.suite) for s in sources(stack, arch)] == [(url, "jammy-updates"), (url, "jammy-security")]


def _simple_index(wheels: list[Path]) -> Callable[[http.server.BaseHTTPRequestHandler], None]:
    """A PEP 503 simple index serving these wheel files (project pages with #sha256 links)."""

    def get(h: http.server.BaseHTTPRequestHandler) -> None:
        project = h.path.strip("/").split("/")[0]
        named = [w for w in wheels if canonicalize_name(parse_wheel_filename(w.name)[0]) == project]
        if h.path.startswith("/files/"):
            found = [w for w in wheels if w.name == unquote(h.path.removeprefix("/files/"))]
            body = found[0].read_bytes() if found else b""
            code = 200 if found else 404
        elif named:
            links = "".join(
                f'<a href="../files/{w.name}#sha256={hashlib.sha256(w.read_bytes()).hexdigest()}">{w.name}</a>\n'
                for w in named
            )
            body, code = f"<html><body>\n{links}</body></html>\n".encode(), 200
        else:
            body, code = b"", 404
        h.send_response(code)
        h.send_header("Content-Type", "application/octet-stream" if h.path.startswith("/files/") else "text/html")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    return get


def test_several_indexes_each_project_from_the_first_that_has_it(tmp_path: Path) -> None:
    """A CPU index stand-in holding torch's +cpu build, then a PyPI stand-in holding a newer torch and
    the rest: torch comes from the first only (never merged with the second's newer one), each wheel
    pinned with its index and hash, and installed from the pins with no index."""
    cpu_dir, pypi_dir = tmp_path / "cpu", tmp_path / "pypi"
    cpu = [make_wheel(cpu_dir, "torch", "2.9.0+cpu")]
    pypi = [
        make_wheel(pypi_dir, "torch", "2.9.1"),
        make_wheel(pypi_dir, "simplepkg", "1.0", modules={"simplepkg.py": ""}),
    ]
    cache = Cache(tmp_path / "cache")
    target = wheels.Target("3.11", Arch.X86_64, 36)
    with http_server(_simple_index(cpu)) as cpu_url, http_server(_simple_index(pypi)) as pypi_url:
        indexes = [f"{cpu_url}/", f"{pypi_url}/"]
        pinned = wheels.resolve(["torch>=2.9", "simplepkg"], indexes, tmp_path, target, cache)
        assert [(w.name, w.version, w.index) for w in pinned] == [
            ("simplepkg", "1.0", f"{pypi_url}/"),
            ("torch", "2.9.0+cpu", f"{cpu_url}/"),
        ]
        assert all(w.sha256 == hashlib.sha256((cache.blob(w.sha256)).read_bytes()).hexdigest() for w in pinned)
        # Fetched again on a machine without them: each from the index the lock names.
        again = Cache(tmp_path / "another-cache")
        wheels.fetch(pinned, indexes, tmp_path, target, again)
        assert all(again.has(w.sha256) for w in pinned)
    # Installed from the pinned files alone, as a component's stage does (--no-index --require-hashes).
    house = tmp_path / "house"
    house.mkdir()
    for w in pinned:
        shutil.copy(again.blob(w.sha256), house / w.file)
    (house / "requirements.txt").write_text(wheels.requirements_text(pinned))
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--require-hashes",
         "--find-links", str(house), "--target", str(tmp_path / "site"), "-r", str(house / "requirements.txt")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    assert (tmp_path / "site" / "simplepkg.py").is_file()


UNREACHED = """schema: 1
name: offline
toolkit:
  vendor: cpusim
  version: 8.3.RC1
  chip: 910b
  packages:
    toolkit:
      x86_64: {file: tk.run, generate: "printf 'toolkit-v1' > {output_dir}/tk.run"}
host: {driver: none}
platform: {os: debian, os_version: "12", python: "3.11", architectures: [x86_64]}
base:
  image: debian@sha256:1111111111111111111111111111111111111111111111111111111111111111
python_index: ["CPU/simple/", "PYPI/"]
components:
  - id: app
    source: {path: app}
    python_packages: ["torch==2.9.0", simplepkg]
    fetch:
      - {url: "FILES/llvm.tar.gz", to: third_party/pkg/llvm.tar.gz}
smoke: {command: "true", expect: ""}
"""


@pytest.mark.usefixtures("preflight_without_waits")
def test_what_no_source_answers_for_is_left_unresolved_and_a_site_line_resolves_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CPU index and a file host nobody reaches: `lock` pins everything else, records those two parts
    as unresolved (exit 3, one line each with the site-configuration line that points it at a mirror);
    `lock --check` skips them, a build refuses naming them; the site line, pointed at loopback
    stand-ins, resolves them."""
    from builder import lock as lock_io
    from builder.inputs.site import SiteConfig
    from builder.model.errors import Unreached
    from builder.plan.prepare import Request, prepare_inputs
    from tests.helpers import free_port, incomplete_parts, run_cli, serving_bytes

    monkeypatch.setenv("STACKBUILD_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("STACKBUILD_SITE_CONFIG", raising=False)
    cpu = [make_wheel(tmp_path / "cpu", "torch", "2.9.0+cpu")]
    pypi = [make_wheel(tmp_path / "pypi", "torch", "2.9.1"), make_wheel(tmp_path / "pypi", "simplepkg", "1.0")]
    root = tmp_path / "project"
    (root / "stacks" / "app").mkdir(parents=True)
    (root / "stacks" / "app" / "main.py").write_text("print('v1')\n")
    stack = root / "stacks" / "offline.yaml"
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens: the host gives no answer
    with http_server(_simple_index(pypi)) as pypi_url:
        stack.write_text(UNREACHED.replace("CPU", dead).replace("PYPI", pypi_url).replace("FILES", dead))
        code, _, err = run_cli(capsys, "--root", str(root), "lock", "offline")
        assert code == 3, err
        parts = incomplete_parts(err)
        assert sorted(parts) == ["fetch third_party/pkg/llvm.tar.gz of app", "x86_64 python packages of app"], err
        assert all("needs 127.0.0.1: " in line for line in parts.values()), err
        assert "run `stackbuild lock offline --arch x86_64` on a machine that reaches those hosts" in err, err
        for source in (f"{dead}/simple/", f"{dead}/llvm.tar.gz"):  # the site lines printed, used below
            assert f'      - {{from: "{source}", to: "<a mirror of it>"}}' in err.splitlines(), err
        written = lock_io.read(root / "lockfiles" / "offline.lock.json")
        assert "app" not in written.architectures[Arch.X86_64].python and not written.components[0].fetched
        assert sorted(u.kind for u in written.unresolved) == ["fetch", "python"]

        code, out, err = run_cli(capsys, "--root", str(root), "lock", "--check", "offline")
        assert code == 0 and "up to date" in out, err
        assert "skipped: x86_64 python packages of app" in err and "skipped: fetch third_party/pkg" in err, err
        request = Request(manifests.load(stack), stack, written, SiteConfig(), Cache(tmp_path / "cache"), Arch.X86_64)
        with pytest.raises(Unreached, match=r"leaves 2 part\(s\) unresolved for x86_64: .*python packages of app"):
            prepare_inputs(request, print)

        # The site lines as printed, each pointed at a loopback stand-in of what nobody reached.
        with http_server(_simple_index(cpu)) as cpu_url, http_server(serving_bytes(lambda: b"llvm")) as files:
            site = tmp_path / "site.yaml"
            site.write_text(
                "url_rewrites:\n"
                f'  - {{from: "{dead}/simple/", to: "{cpu_url}/"}}\n'
                f'  - {{from: "{dead}/llvm.tar.gz", to: "{files}/llvm.tar.gz"}}\n'
            )
            code, _, err = run_cli(capsys, "--root", str(root), "--site-config", str(site), "lock", "offline")
    assert code == 0 and "unresolved" not in err, err
    relocked = lock_io.read(root / "lockfiles" / "offline.lock.json")
    assert not relocked.unresolved
    torch = next(w for w in relocked.architectures[Arch.X86_64].python["app"] if w.name == "torch")
    assert (torch.version, torch.index) == ("2.9.0+cpu", f"{dead}/simple/")  # the manifest's URL, as locked
    assert relocked.components[0].fetched[0].sha256 == hashlib.sha256(b"llvm").hexdigest()


def _reference_copy(tmp_path: Path, text: str) -> Path:
    shutil.copytree(
        ROOT / "stacks" / "reference", tmp_path / "stacks" / "reference", ignore=shutil.ignore_patterns("build")
    )
    (tmp_path / "stacks" / "m.yaml").write_text(text)
    return tmp_path / "stacks" / "m.yaml"


APT_REPO = "apt_repositories:\n  - {url: 'http://apt.example/debian', suite: bookworm-updates}\n"
APT_REPO += "runtime_system_packages:"


def test_a_base_or_apt_repository_that_gives_no_answer_is_unresolved_kept_for_others_and_dropped_when_moot(
    tmp_path: Path,
) -> None:
    """aarch64's mirror and the apt repository give no answer: its base and x86_64's system packages
    are recorded unresolved (lock --check's drift check skips them); a lock of x86_64 alone keeps
    aarch64's record while the manifest still takes its base from that mirror, and drops it once the
    manifest names another."""
    from builder import manifest
    from builder.inputs import bootstrap
    from builder.inputs.site import SiteConfig
    from builder.lock.check import check
    from builder.lock.resolve import resolve
    from builder.lock.resolver import Resolver
    from builder.store.http import NoAnswer

    text = (ROOT / "stacks" / "reference.yaml").read_text().replace("runtime_system_packages:", APT_REPO, 1)
    path = _reference_copy(tmp_path, text.replace("mirror: http://deb.debian.org/debian", ARM_MIRROR, 1))

    def base(spec: object, arch: Arch, *_: object) -> bootstrap.BaseTarball:
        if arch == Arch.AARCH64:
            raise NoAnswer(
                "the aarch64 mirror of bookworm: cannot resolve ports.example", "http://ports.example/debian"
            )
        return bootstrap.BaseTarball("0" * 64, {})

    def apt(_base: object, repos: list[debs.AptSource], *_: object) -> dict[str, list[debs.Deb]]:
        raise NoAnswer(f"apt repository {repos[0].suite}: cannot resolve apt.example", repos[0].url)

    resolver = Resolver(tmp_path / "stacks", SiteConfig(), Cache(tmp_path / "cache"), HttpClient(), print, base, apt)
    locked = resolve(manifest.load(path), resolver, [Arch.X86_64, Arch.AARCH64])
    assert {(u.kind, u.arch, u.url) for u in locked.unresolved} == {
        ("system", Arch.X86_64, "http://apt.example/debian"),
        ("base", Arch.AARCH64, "http://ports.example/debian"),
    }
    assert locked.architectures[Arch.X86_64].base and not locked.architectures[Arch.AARCH64].base
    assert check(locked, manifest.load(path), resolver, str(path)).drift == []

    again = resolve(manifest.load(path), resolver, [Arch.X86_64], previous=locked)
    assert {(u.kind, u.arch) for u in again.unresolved} == {("system", Arch.X86_64), ("base", Arch.AARCH64)}
    path.write_text(path.read_text().replace("http://ports.example/debian", "http://ports.example/other"))
    moved = resolve(manifest.load(path), resolver, [Arch.X86_64], previous=again)
    assert {(u.kind, u.arch) for u in moved.unresolved} == {("system", Arch.X86_64)}


ARM_MIRROR = "mirror: http://deb.debian.org/debian\n    mirrors: {aarch64: 'http://ports.example/debian'}"


@pytest.mark.usefixtures("preflight_without_waits")
def test_a_relock_whose_sources_give_no_answer_keeps_the_locks_pins(tmp_path: Path) -> None:
    """Locked once; then the base's mirror, the Python index and a fetch: URL give no answer, on a
    machine whose cache lacks the fetched file: each part keeps the lock's pin (its spec unchanged),
    said, and nothing is recorded unresolved."""
    from builder import manifest
    from builder.inputs import bootstrap
    from builder.inputs.site import SiteConfig
    from builder.lock.resolve import resolve
    from builder.lock.resolver import Resolver
    from builder.store.http import NoAnswer
    from tests.helpers import free_port, serving_bytes

    pypi = [make_wheel(tmp_path / "pypi", "simreport", "1.0")]
    with http_server(_simple_index(pypi)) as index, http_server(serving_bytes(lambda: b"third")) as files:
        text = (ROOT / "stacks" / "reference.yaml").read_text()
        text = text.replace("python_index: reference/wheelhouse", f"python_index: ['{index}/']")
        text = text.replace("  - id: harness\n", f"  - id: harness\n    fetch: [{{url: '{files}/t.zip', to: t.zip}}]\n")
        path = _reference_copy(tmp_path, text)
        cache = Cache(tmp_path / "cache")
        tarball = bootstrap.BaseTarball("1" * 64, {})
        first = Resolver(tmp_path / "stacks", SiteConfig(), cache, HttpClient(), print, lambda *_: tarball, _no_debs)
        locked = resolve(manifest.load(path), first, [Arch.X86_64])

    def down(spec: object, arch: Arch, *_: object) -> bootstrap.BaseTarball:
        raise NoAnswer("the x86_64 mirror of bookworm: cannot resolve deb.debian.org", "http://deb.debian.org/debian")

    dead = f"http://127.0.0.1:{free_port()}/"
    site = SiteConfig.model_validate({"url_rewrites": [{"from": index + "/", "to": dead}, {"from": files, "to": dead}]})
    said: list[str] = []
    other = Cache(tmp_path / "other")
    elsewhere = Resolver(tmp_path / "stacks", site, other, HttpClient(), said.append, down, _no_debs)
    relocked = resolve(manifest.load(path), elsewhere, [Arch.X86_64], previous=locked)
    assert relocked.unresolved == []
    assert relocked.architectures == locked.architectures and relocked.components == locked.components
    assert sum("keeping" in line for line in said) == 3, said  # base, python packages, the fetch


def _no_debs(*_: object) -> dict[str, list[debs.Deb]]:
    return {}
