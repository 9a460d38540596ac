"""Sessions: build-stack, publish, lock, tests, lint, reference-native, bench. `nox -l` lists them."""

from __future__ import annotations

import itertools
import tempfile
import time

import nox
import nox.command

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True
UNREACHABLE = 3  # stackbuild's exit code for a source that did not answer (builder.model.errors.Unreached)
OUTAGE_RETRY_SECONDS = (30, 120)

# Written from the commands' declarations (builder/cli/stack_commands.py, image_commands.py) by
# builder.cli.reference, not imported: nox loads this file where stackbuild's dependencies may not be.
# <generated: stackbuild's options the sessions read, from their declarations; `nox -s docs`>
ARCHITECTURES = ("x86_64", "aarch64")  # every architecture --arch names
ARCH = "--arch"  # build's, lock's and publish's architecture
CHECK = "--check"  # lock's: check the lock, write nothing
PREFLIGHT = "--preflight"  # build's: only what needs no engine
# </generated>


def _foreign(posargs: list[str]) -> list[str]:
    """Another architecture than the host's builds under emulation: the setup step installs it."""
    arches = [value for flag, value in itertools.pairwise(posargs) if flag == ARCH]
    return [option for arch in arches for option in ("--foreign", arch)]


@nox.session(name="build-stack")
def build_stack(session: nox.Session) -> None:
    """Build a stack (default: reference) into image tags: nox -s build-stack -- [STACK] [build options]."""
    session.install("-e", ".")
    # What needs no engine first (a known-bad combination, what a first lock needs): a build that
    # cannot work stops before anything is installed on the host.
    session.run("stackbuild", "build", PREFLIGHT, *session.posargs)
    session.run("python", "-m", "builder.hostsetup", "--docker", *_foreign(session.posargs))
    session.run("stackbuild", "build", *session.posargs)


@nox.session
def publish(session: nox.Session) -> None:
    """Build, smoke and push a stack for every architecture: nox -s publish -- STACK --registry R [options]."""
    session.install("-e", ".")
    # Every architecture the manifest lists is built unless --arch narrows it: emulation may be needed.
    foreign = _foreign(session.posargs) or [option for arch in ARCHITECTURES for option in ("--foreign", arch)]
    session.run("python", "-m", "builder.hostsetup", "--docker", *foreign)
    session.run("stackbuild", "publish", *session.posargs)


@nox.session
def lock(session: nox.Session) -> None:
    """Lock a stack, or check its lock: nox -s lock -- STACK [--check] [--arch A ...]."""
    session.install("-e", ".")
    session.run("python", "-m", "builder.hostsetup", *_foreign(session.posargs))
    # Exit 3 from `lock --check` (a source did not answer) is an outage, not drift: tried again
    # first. A lock that leaves parts unresolved (exit 3 too) is written: it is said, not retried.
    retries = OUTAGE_RETRY_SECONDS if CHECK in session.posargs else ()
    for wait in (*retries, None):
        try:
            session.run("stackbuild", "lock", *session.posargs)
            return
        except nox.command.CommandFailed as failed:
            if failed.return_code != UNREACHABLE or wait is None:
                raise
            session.log(f"a source did not answer (exit {UNREACHABLE}): trying again in {wait} s")
            time.sleep(wait)


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite (pytest options after --: -m docker, -m "not docker", -k ...)."""
    session.install("-e", ".[test]")
    fast_only = "not docker" in " ".join(session.posargs)
    # The Docker tier also needs a registry, skopeo and arm64 emulation (tests/docker/test_multiarch.py).
    docker_tier = ["--docker", "--registry", "--foreign", "aarch64"]
    session.run("python", "-m", "builder.hostsetup", *([] if fast_only else docker_tier))
    # The fast tier runs on every core (pytest-xdist); the Docker tier shares one engine, so it stays serial.
    # The report ends with the coverage of builder/ by what ran (the fast tier's with -m "not docker").
    coverage = ["--cov=builder", "--cov-report=term:skip-covered"]
    session.run("pytest", *coverage, *(["-n", "auto"] if fast_only else []), *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (check + format), mypy (strict) and the import contract (import-linter)."""
    session.install("-e", ".[lint,test]")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")
    session.run("lint-imports")


@nox.session
def docs(session: nox.Session) -> None:
    """Regenerate docs/cli.md and noxfile.py's generated block from the commands' declarations."""
    session.install("-e", ".")
    session.run("python", "-m", "builder.cli.reference")  # tests/unit/project/test_docs.py checks both


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmark stackbuild against a plain multi-stage `docker build` (prints a table)."""
    # The second-machine run uses the tests' registry and second daemon; --plot, matplotlib.
    session.install("-e", ".[test]", "matplotlib")
    session.run("python", "-m", "builder.hostsetup", "--docker", "--registry")
    session.run("python", "bench/build_bench.py", *session.posargs)


@nox.session(name="reference-native")
def reference_native(session: nox.Session) -> None:
    """Build the reference stack natively (no Docker) into a temp prefix and run the matmul smoke."""
    session.install("numpy", "setuptools>=70", "wheel")
    session.run("python", "-m", "builder.hostsetup", env={"PYTHONPATH": "."})
    prefix = session.posargs[0] if session.posargs else tempfile.mkdtemp(prefix="stackbuild-native.")
    session.run("bash", "stacks/reference/build-native.sh", prefix, "--smoke", external=True)
