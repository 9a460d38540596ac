"""What a component declares about its build, proven in real stages."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.engine.docker_engine import DockerEngine
from tests.docker.conftest import plan_of, stackbuild, write_variant

HARNESS_PIP = "      - python3 -m pip install --quiet --no-cache-dir --no-deps --no-build-isolation --no-index"


@pytest.mark.parametrize("network", [False, True], ids=["hermetic", "network-true"])
def test_stages_build_without_network_unless_they_declare_it(
    workspace: Path, engine: DockerEngine, network: bool
) -> None:
    replacements = [(HARNESS_PIP, "      - ls /sys/class/net > interfaces.txt\n" + HARNESS_PIP)]
    if network:
        replacements.append(("  - id: harness\n", "  - id: harness\n    network: true\n"))
    name = write_variant(workspace, f"reftest-net-{network}".lower(), replacements)
    stackbuild(workspace, "lock", name, check=True)
    run = stackbuild(workspace, "build", name, "--no-smoke")
    assert run.returncode == 0, run.stderr[-3000:]
    plan = plan_of(workspace, name)
    assert plan.stages["harness"].network is network
    interfaces = engine.run(plan.stages["harness"].tag(), ["cat", "/opt/stack/harness/interfaces.txt"]).output.split()
    if network:
        assert "lo" in interfaces and len(interfaces) > 1, interfaces
        shown = stackbuild(workspace, "plan", name, check=True).stdout
        assert "note: harness builds with network access (network: true)" in shown
        assert '"network": true' in (workspace / "lockfiles" / f"{name}.lock.json").read_text()
    else:
        assert interfaces == ["lo"]
