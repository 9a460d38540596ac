from __future__ import annotations

import dataclasses
import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from builder.store import http
from tests.reference.isolation import isolated

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "stacks" / "reference"
DOCKER_TIER = Path(__file__).resolve().parent / "docker"
# The suite's own image names and cache, never the user's (stackbuild/..., $STACKBUILD_CACHE): a run
# removes and adds tags under its prefix alone. The cache is a fixed directory beside the user's, so
# the next run reuses the base bootstrap and the downloads.
TEST_PREFIX = "stackbuild-test"
TEST_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "stackbuild-tests"


def pytest_configure(config: pytest.Config) -> None:
    """Set before any test runs, in every xdist worker too, and inherited by every stackbuild the tests start."""
    os.environ["STACKBUILD_IMAGE_PREFIX"] = TEST_PREFIX
    os.environ["STACKBUILD_CACHE"] = str(TEST_CACHE)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: none without it (-p no:xdist)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto`: a worker more than there are cores, which steal each other's pending tests.

    A fast-tier worker spends about a quarter of its time waiting (on the subprocesses, loopback
    servers and git daemons its tests start): a third worker on two cores fills it. The heavy fuzz
    tests sit side by side in collection order, so xdist's `load` hands them all to one worker;
    `worksteal` lets the idle ones take its pending tests. On two cores, one more worker and work
    stealing took the tier from about 66 s to 53-65 s (four workers: 68 s). An explicit --dist, or
    PYTEST_XDIST_AUTO_NUM_WORKERS, still decides.
    """
    if config.option.dist == "no":  # not given: xdist would make it `load` after this hook
        config.option.dist = "worksteal"
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    return len(os.sched_getaffinity(0)) + 1


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The fast tier (-m "not docker", exactly) does not import the docker tier at all: its modules pull
    in what only Docker tests need (the SBOM schema validator alone takes 4 s). Any other selection
    collects it and lets the marker decide."""
    if config.option.markexpr.strip() == "not docker" and collection_path.is_relative_to(DOCKER_TIER):
        return True
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The one place that says which tests need Docker: every test under tests/docker/ (a new file
    there cannot slip into the fast tier by forgetting a marker)."""
    for item in items:
        if item.path.is_relative_to(DOCKER_TIER):
            item.add_marker(pytest.mark.docker)


@pytest.fixture(scope="session")
def native_stack(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The reference stack built natively (no Docker) once per run; its environment. The tests only
    read it, so xdist's workers share one build: the first to need it builds it, the others wait."""
    for tool in ("cc", "make", "cmake"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is needed to build the reference stack natively (run the host setup step)")
    # A worker's base temp is <this run's>/popen-gwN: its parent is this run's alone, shared by its workers.
    run = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        run = run.parent
    prefix = run / "native"
    with (run / "native.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (prefix / "env.sh").exists():  # the script's last step: a failed build is built again
            env = dict(os.environ, PYTHON=sys.executable)
            # The toolkit's installer, as root, writes /etc/Ascend and /var/log/ascend_seclog: not this host's.
            build = subprocess.run(
                isolated(["bash", str(REFERENCE / "build-native.sh"), str(prefix)], run / "native-overlays"),
                env=env,
                capture_output=True,
                text=True,
            )
            assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    dump = subprocess.run(
        ["bash", "-c", f"source {prefix}/env.sh && env -0"], capture_output=True, check=True
    ).stdout.decode()
    stack_env = dict(line.split("=", 1) for line in dump.split("\0") if "=" in line)
    stack_env["STACK_PREFIX"] = str(prefix)
    return stack_env


@pytest.fixture
def preflight_without_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """A host's pre-flight check (builder.store.http.must_answer) with its attempts but without the
    wait between them: a test that sends hosts to loopback ports where nothing listens would otherwise
    sleep half a second a check, and what it proves (an outage told apart and said) does not depend on it."""
    monkeypatch.setattr(http, "PREFLIGHT", dataclasses.replace(http.PREFLIGHT, backoff=0.0))
