"""The bench's peers and sweep (bench/build_bench.py, bench/dag_peer.py): a stage's own stages keep
names of their own in the peers' one Dockerfile, the sweep pads the toolkit package alone, the top
size is lowered to what the disk holds, and stamped logs (--logs) are read as plain ones."""

from __future__ import annotations

import importlib
import re
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from builder.model.arch import Arch
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
build_bench = importlib.import_module("build_bench")  # bench/ is a script directory, not a package
dag_peer = importlib.import_module("dag_peer")

RUNTIME = """# stackbuild: parent stages (each build argument names the parent's image).
ARG BASE_DEVEL_IMAGE=stackbuild/stage/base-devel:1
ARG HARNESS_IMAGE=stackbuild/stage/harness:1
FROM ${BASE_DEVEL_IMAGE} AS base-devel
FROM ${HARNESS_IMAGE} AS harness
FROM base-devel AS cann-runtime
RUN --mount=type=bind,source=packages,target=/mnt bash /mnt/toolkit.run --install --whitelist=nnrt
FROM base-runtime
COPY --from=cann-runtime ["/usr/local/Ascend", "/usr/local/Ascend"]
COPY --from=harness ["/opt/stack/harness/python", "/opt/stack/harness/python"]
"""


def test_a_stages_own_stage_is_named_after_it_in_the_peers_file() -> None:
    stage = SimpleNamespace(name="runtime-image", dockerfile=RUNTIME, env_capture=None, probes=(), probe_workdir="/")
    text = dag_peer._stage_text(stage, {}, probes=False)
    assert re.findall(r"^FROM .*$", text, re.M) == [
        "FROM base-devel AS runtime-image-cann-runtime",
        "FROM base-runtime AS runtime-image",
    ]
    assert 'COPY --from=runtime-image-cann-runtime ["/usr/local/Ascend", "/usr/local/Ascend"]' in text
    assert 'COPY --from=harness ["/opt/stack/harness/python"' in text  # another stage of the file: its name
    assert "source=runtime-image/packages," in text  # the stage's context, under its name


def test_the_sweep_pads_the_toolkit_package_alone(tmp_path: Path) -> None:
    build_bench.prepare(tmp_path, [1.0])
    padded = (tmp_path / "stacks" / "bench1024m.yaml").read_text()
    lines = [line for line in padded.splitlines() if "reference/toolkit/pack.py" in line]
    assert lines and all(("--pad-mb 1024" in line) == ("--kind ops" not in line) for line in lines)
    assert re.search(r"^name: bench1024m$", padded, re.M)


def test_a_top_size_the_disk_cannot_hold_is_lowered_to_what_it_holds() -> None:
    per_gib = build_bench.GIB_OF_DISK_PER_TOOLKIT_GIB
    assert build_bench.sizes_that_fit([0.25, 1, 4], 4 * per_gib) == ([0.25, 1, 4], "")
    kept, why = build_bench.sizes_that_fit([0.25, 1, 4], 2.5 * per_gib)
    assert kept == [0.25, 1, 2.0] and why.endswith("2 GiB is the top")
    assert build_bench.sizes_that_fit([0.25, 1, 4], 0.5 * per_gib)[0] == [0.25, 1.0]


def test_stamped_stage_logs_give_the_same_times(tmp_path: Path) -> None:
    logs = tmp_path / ".stackbuild" / "logs" / "s" / Arch.host().value
    logs.mkdir(parents=True)
    marks = ["context ready in 0.10s", "image built in 1.60s", "normalised to sha256:x in 0.40s"]
    marks.append("built and probed in 2.30s")
    plain = "".join(f"# {mark}\n" for mark in marks)
    (logs / "plain.log").write_text(plain)
    (logs / "stamped.log").write_text("".join(f"[{n:7.2f}] {line}\n" for n, line in enumerate(plain.splitlines())))
    times = build_bench.stage_times(tmp_path, "s", time.time() - 60)
    assert times["stamped"] == times["plain"]
