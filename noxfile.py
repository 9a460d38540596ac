"""Sessions: tests, lint, reference-native. `nox -l` lists them."""

from __future__ import annotations

import tempfile

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite (pass pytest options after --, e.g. -m docker)."""
    session.install("-e", ".[test]")
    session.run("python", "-m", "builder.hostsetup")
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff and mypy."""
    session.install("-e", ".[lint,test]")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")


@nox.session(name="reference-native")
def reference_native(session: nox.Session) -> None:
    """Build the reference stack natively (no Docker) into a temp prefix and run the matmul smoke."""
    session.install("numpy", "setuptools>=70", "wheel")
    session.run("python", "-m", "builder.hostsetup", env={"PYTHONPATH": "."})
    prefix = session.posargs[0] if session.posargs else tempfile.mkdtemp(prefix="stackbuild-native.")
    session.run("bash", "stacks/reference/build-native.sh", prefix, "--smoke", external=True)
