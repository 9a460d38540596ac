"""Bit for bit: a small stack (tests/emu) built twice from nothing, the second time from a fresh clone
of the checkout elsewhere (another origin, another commit of the same lock, files touched, another
umask and time zone) on another daemon, gives the same image for every stage and the same registry
digests, on a bootstrapped base and on an image pinned by digest; a component that writes the time
does not, and is named with its file; a bootstrapped base holds nothing of the machine that made it.
(The reference stack's run is measured outside CI: docs/reproducibility.md.)"""

from __future__ import annotations

import json
import os
import re
import tarfile
import tempfile
from pathlib import Path

import docker

from builder.cli.configuration import cache_root
from builder.inputs.bootstrap import HOST_FILES
from builder.model.arch import Arch
from builder.store.cache import Cache
from tests.docker.conftest import SecondDaemon, emu_workspace, plan_of, push_by_digest, stackbuild
from tests.helpers import git, registry

HELLO_BUILD = "    build: [python3 make_launcher.py]\n"
RANDOM_MTIME = 'touch -d "@$(( $(date +%s) - RANDOM ))" launch.py'  # another mtime each build


def verdicts(stdout: str) -> dict[str, str]:
    return dict((m[1], m[0]) for m in re.findall(r"^(same|differs)\s+(\S+)\s+sha256:", stdout, re.M))


def committed(root: Path) -> str:
    """root made a git checkout: the stack, then one more commit touching only README.md; the first commit."""
    git("init", "-q", "-b", "main", cwd=root)
    git("remote", "add", "origin", "https://git.example.com/team/stacks.git", cwd=root)
    git("add", "-A", cwd=root)
    git("commit", "-q", "-m", "the stack", cwd=root)
    (root / "README.md").write_text("one more commit\n")
    git("add", "README.md", cwd=root)
    git("commit", "-q", "-m", "a README", cwd=root)
    return git("rev-parse", "HEAD~1", cwd=root)


def test_a_bootstrapped_base_holds_no_file_of_the_machine_that_made_it(workspace: Path) -> None:
    """mmdebstrap copies the host's resolv.conf and hostname in; left there, a base's sha256 (and every
    digest above it) would depend on the machine that bootstrapped it."""
    locked = json.loads((workspace / "lockfiles" / "reftest.lock.json").read_text())
    for flavor, pinned in locked["architectures"][Arch.host().value]["base"].items():
        with tarfile.open(Cache(cache_root(os.environ)).blob(pinned["sha256"])) as tar:
            members = {m.name.removeprefix("./"): m for m in tar.getmembers()}
            for name in HOST_FILES:
                member = members[name]
                owner = (member.uid, member.gid)
                assert (member.isfile(), member.size, member.mode, owner) == (True, 0, 0o644, (0, 0)), (flavor, name)


def test_two_builds_from_nothing_give_the_same_images_and_registry_digests(tmp_path: Path) -> None:
    """The second from a fresh clone at the commit before (the same lock), with another origin, on another daemon."""
    root = emu_workspace(tmp_path)
    before = committed(root)
    daemon = SecondDaemon(Path(tempfile.mkdtemp(prefix="sb-r-", dir="/tmp")))
    daemon.start()
    try:
        with registry(tmp_path / "registry") as address:
            run = stackbuild(
                root, "verify-reproducible", "emu", "--arch", "x86_64", "--at", "HEAD~1",
                "--second-engine", daemon.host, "--registry", f"{address}/verify", timeout=2400,
            )  # fmt: skip
    finally:
        daemon.remove()
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert re.search(
        rf"second build from nothing: a clone at \S+ \(origin file://{root}, commit {before[:12]}\)", run.stderr
    )
    stages = {"base-devel", "base-runtime", "toolkit", "hello", "devel-image", "runtime-image"}
    assert verdicts(run.stdout) == dict.fromkeys(stages, "same")
    assert len(re.findall(r"^same\s+\S+\s+registry digest sha256:", run.stdout, re.M)) == len(stages)
    assert "6 of 6 stages give the same image both times" in run.stderr


def test_a_component_writing_the_time_differs_by_name_and_one_differing_in_mtimes_does_not(tmp_path: Path) -> None:
    clock = (
        "  - id: clock\n    source: {path: emu/hello}\n"
        "    build: ['date +%s%N > stamp.txt']\n    artifacts:\n      - {path: stamp.txt}\n"
    )
    root = emu_workspace(
        tmp_path,
        replacements=(
            # hello's launch.py gets another mtime each build: clamped to the source date, it is the same
            (HELLO_BUILD, f"    build: [python3 make_launcher.py, '{RANDOM_MTIME}']\n"),
            ("smoke:\n", clock + "smoke:\n"),
        ),
    )
    run = stackbuild(root, "verify-reproducible", "emu", "--arch", "x86_64", timeout=2400)
    assert run.returncode == 1, run.stdout + run.stderr[-3000:]
    found = verdicts(run.stdout)
    assert found["hello"] == "same" and found["clock"] == "differs", run.stdout
    assert re.search(r"^\s+layer \d+: opt/stack/clock/stamp.txt: content$", run.stdout, re.M), run.stdout
    assert "launch.py" not in run.stdout


def _stage_images(root: Path) -> dict[str, str]:
    """Each stage's image id as the build's provenance record names it (those it names)."""
    record = json.loads((root / ".stackbuild" / "provenance" / "emu" / "x86_64.json").read_text())
    return {name: stage["image"] for name, stage in record["stages"].items() if stage["image"]}


def test_another_clone_at_another_commit_on_another_daemon_gives_the_same_images(tmp_path: Path) -> None:
    """Built from a checkout, then from a clone of it with another origin URL and one more commit
    touching only README.md, on a second daemon with no stage image to reuse: every stage and both
    finals are the same image (nothing of the checkout is in them); each build's provenance names
    its own origin and commit."""
    first = emu_workspace(tmp_path)
    git("init", "-q", "-b", "main", cwd=first)
    git("remote", "add", "origin", "https://git.example.com/team/stacks.git", cwd=first)
    git("add", "-A", cwd=first)
    git("commit", "-q", "-m", "the emu stack", cwd=first)
    built = stackbuild(first, "build", "emu", "--arch", "x86_64", "--no-smoke", timeout=2400)
    assert built.returncode == 0, built.stderr[-3000:]

    second = tmp_path / "elsewhere" / "clone"
    git("clone", "-q", str(first), str(second), cwd=tmp_path)
    git("remote", "set-url", "origin", "https://mirror.example.org/other/stacks.git", cwd=second)
    (second / "README.md").write_text("a clone with one more commit\n")
    git("add", "README.md", cwd=second)
    git("commit", "-q", "-m", "a README", cwd=second)
    daemon = SecondDaemon(Path(tempfile.mkdtemp(prefix="sb-c-", dir="/tmp")))
    daemon.start()
    try:
        again = stackbuild(
            second, "build", "emu", "--arch", "x86_64", "--no-smoke", "--engine", daemon.host, timeout=2400
        )
    finally:
        daemon.remove()
    assert again.returncode == 0, again.stderr[-3000:]
    first_images, second_images = _stage_images(first), _stage_images(second)
    both = first_images.keys() & second_images.keys()
    assert both >= {"base-runtime", "toolkit", "hello", "devel-image", "runtime-image"}, (first_images, second_images)
    assert {name: first_images[name] for name in both} == {name: second_images[name] for name in both}
    sources = [
        json.loads((r / ".stackbuild/provenance/emu/x86_64.json").read_text())["source"] for r in (first, second)
    ]
    assert sources[0]["origin"] == "https://git.example.com/team/stacks.git"
    assert sources[1] == {
        "origin": "https://mirror.example.org/other/stacks.git",
        "commit": git("rev-parse", "HEAD", cwd=second),
    }
    assert sources[0]["commit"] != sources[1]["commit"]


def test_the_same_lock_published_from_two_daemons_converges(tmp_path: Path) -> None:
    """One lock published from the local daemon, then from a second one that builds it from nothing:
    the second finds every index tag already naming its index, says so and moves none, and reports
    the same digests."""
    root = emu_workspace(tmp_path)
    daemon = SecondDaemon(Path(tempfile.mkdtemp(prefix="sb-p-", dir="/tmp")))
    daemon.start()
    try:
        with registry(tmp_path / "registry") as address:
            publish = ["publish", "emu", "--registry", f"{address}/team", "--arch", "x86_64"]
            first = stackbuild(root, *publish, timeout=2400)
            assert first.returncode == 0, first.stderr[-3000:]
            second = stackbuild(root, *publish, "--engine", daemon.host, timeout=2400)
    finally:
        daemon.remove()
    assert second.returncode == 0, second.stderr[-3000:]

    def pushed(stdout: str) -> dict[str, str]:  # what went to the registry under a tag (not referrers)
        return dict(re.findall(rf"^({re.escape(address)}/[^@\s]+)  (sha256:[0-9a-f]{{64}})  \(", stdout, re.M))

    assert pushed(second.stdout) == pushed(first.stdout) and len(pushed(first.stdout)) == 6  # 2 images, 4 tags
    # The provenance went up with the first publish (one per index); the second attaches none.
    assert first.stdout.count("(provenance of") == 2 and "(provenance of" not in second.stdout
    indexes = [line for line in second.stdout.splitlines() if "(index of" in line]
    assert len(indexes) == 4 and all(line.endswith("already there)") for line in indexes), second.stdout
    assert not any("already there" in line for line in first.stdout.splitlines())


def test_a_stack_on_an_image_pinned_by_digest_verifies(tmp_path: Path) -> None:
    """The official-image path: emu's bootstrapped base-devel stage, pushed to a loopback registry and
    named by digest only (pulled as an official CANN image is), as the base of emu; built twice from
    nothing, the stages on it normalised over the pinned image's layers, every stage is the same."""
    root = emu_workspace(tmp_path)
    stackbuild(root, "build", "emu", "--arch", "x86_64", "--no-smoke", check=True)
    client = docker.from_env()
    with registry(tmp_path / "registry") as address:
        pinned = push_by_digest(client, plan_of(root, "emu").stages["base-devel"].tag(), f"{address}/base", "emu")
        manifest = root / "stacks" / "emu.yaml"
        text, bases = re.subn(r"(?m)^base:\n(?:  .*\n)+", f"base:\n  image: {pinned}\n", manifest.read_text())
        assert bases == 1
        manifest.write_text(text)
        stackbuild(root, "lock", "emu", "--arch", "x86_64", check=True)
        run = stackbuild(root, "verify-reproducible", "emu", "--arch", "x86_64", timeout=2400)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert verdicts(run.stdout) == dict.fromkeys(plan_of(root, "emu").stages, "same")
    log = (root / ".stackbuild/logs/emu/x86_64/base-runtime.verify-second.log").read_text()
    assert "# normalised to sha256:" in log
