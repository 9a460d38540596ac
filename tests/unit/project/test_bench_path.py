"""The bench's critical path reads when a stage's children could start from its log (they may start
before its environment is added, which its "image built" time includes)."""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

from builder.model.arch import Arch
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
build_bench = importlib.import_module("build_bench")  # bench/ is a script directory, not a package

LOG = """# context ready in 0.10s
# as built for harness in 1.20s
# image built in 1.60s
# normalised to sha256:x in 0.40s from the data root
# built and probed in 2.30s
"""


def test_a_stage_whose_children_started_before_its_environment_counts_until_then(tmp_path: Path) -> None:
    logs = tmp_path / ".stackbuild" / "logs" / "s" / Arch.host().value
    logs.mkdir(parents=True)
    (logs / "early.log").write_text(LOG)
    (logs / "plain.log").write_text(LOG.replace("# as built for harness in 1.20s\n", ""))
    times = build_bench.stage_times(tmp_path, "s", time.time() - 60)
    assert times["early"].critical == 1.2
    assert times["plain"].critical == 1.6  # its context and build: its children waited for it
