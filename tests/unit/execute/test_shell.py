"""`stackbuild shell` after a failure: the failure recorded with its command, the Dockerfile cut
before the step that ran it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from builder.engine import BuildFailed, BuildSpec, buildkit
from builder.execute.debug import FAILED_COMMAND, cut_before, last_failure, rerun_line
from builder.execute.stage import StageRunner
from builder.execute.stage_log import StageFailed
from builder.store.cache import Cache
from tests.fake_engine import FakeEngine
from tests.golden_plan import GOLDEN, golden_plan

KERNELS = (GOLDEN / "kernels.Dockerfile").read_text()


def test_the_dockerfile_is_cut_before_the_exec_form_step_that_failed() -> None:
    cut = cut_before(KERNELS, "/bin/bash /opt/stackbuild/steps/kernels/build.sh")
    assert cut is not None and KERNELS.startswith(cut)
    assert cut.rstrip().endswith('COPY ["steps/", "/opt/stackbuild/steps/kernels/"]')
    assert "RUN" not in cut


def test_a_shell_form_step_is_found_through_the_shell_in_force() -> None:
    dockerfile = 'FROM x\nSHELL ["/bin/bash", "-o", "pipefail", "-c"]\nRUN echo a\nRUN make \\\n    all\nRUN echo b\n'
    cut = cut_before(dockerfile, "/bin/bash -o pipefail -c make     all")
    assert cut == 'FROM x\nSHELL ["/bin/bash", "-o", "pipefail", "-c"]\nRUN echo a\n'
    assert cut_before(dockerfile, "/bin/sh -c make all") is None  # not what ran: no step is guessed


def test_the_rerun_line_quotes_the_script_of_a_shell_form_step() -> None:
    assert rerun_line("/bin/bash -o pipefail -c make all") == "/bin/bash -o pipefail -c 'make all'"
    assert rerun_line("/bin/bash /opt/stackbuild/steps/kernels/build.sh") == (
        "/bin/bash /opt/stackbuild/steps/kernels/build.sh"
    )


def test_a_failed_build_records_its_command_for_its_key(tmp_path: Path) -> None:
    plan, cache = golden_plan(), Cache(tmp_path / "cache")
    stage = plan.stages["base-devel"]
    engine = FakeEngine(fail_build="FROM")
    with pytest.raises(StageFailed):
        StageRunner(plan, engine, cache, tmp_path / "logs")(stage, lambda state, note="": None)
    failure = last_failure(cache, plan, stage)
    assert failure is not None and failure.command == "/bin/sh -c make"
    assert last_failure(cache, plan, plan.stages["toolkit"]) is None  # only the stage that failed


def test_a_multi_line_step_quoted_by_buildkit_is_found_again() -> None:
    """BuildKit 23+ prints the failed command as a Go string; the step is found in the Dockerfile."""
    toolkit = (GOLDEN / "toolkit.Dockerfile").read_text()
    start = toolkit.index("RUN set -- ")
    step = toolkit[start : toolkit.index("\n", toolkit.index("the installed package reports", start))]
    ran = "/bin/bash -o pipefail -c " + step.removeprefix("RUN ").replace("\\\n", "")
    printed = json.dumps(ran)[1:-1]  # a Go-quoted string reads as a JSON one
    message = buildkit.failure(
        [f'ERROR: failed to solve: process "{printed}" did not complete successfully: exit code: 1'], 1
    )
    found = FAILED_COMMAND.search(message)
    assert found is not None and found.group(1) == ran
    assert cut_before(toolkit, found.group(1)) == toolkit[:start]


def test_shell_is_told_the_failed_step_as_build_headlines_it_not_the_engines_message(tmp_path: Path) -> None:
    """The record `shell` reads names the build step and the compiler's line, as `build`'s headline does."""
    plan, cache = golden_plan(), Cache(tmp_path / "cache")
    stage = plan.stages["base-devel"]
    tail = [
        "main.c:3:1: error: expected ';' before '}' token",
        "stackbuild: kernels: build step 1/1: make failed (exit code 2)",
    ]

    class FailingStep(FakeEngine):
        def build(self, context: Path, log: Callable[[str], None], spec: BuildSpec) -> str:
            raise BuildFailed("The command '/bin/sh -c make' returned a non-zero code: 2", tail)

    with pytest.raises(StageFailed) as failed:
        StageRunner(plan, FailingStep(), cache, tmp_path / "logs")(stage, lambda state, note="": None)
    failure = last_failure(cache, plan, stage)
    assert failure is not None and failure.reason == failed.value.reason
    assert "returned a non-zero code" not in failure.reason and "main.c:3:1: error" in failure.reason
