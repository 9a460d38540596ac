"""The image `stackbuild shell` opens for a stage that failed: its Dockerfile up to the step that
failed (all of it after failed probes), built from the builder's cache with the stage's context."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from builder.engine import BuildEngine
from builder.execute import chain
from builder.execute.chain import Request
from builder.execute.debug import Failure, cut_before
from builder.execute.stage_image import StageImages
from builder.model.errors import StackbuildError
from builder.model.say import Say


def make_failed_state(
    request: Request, engine: BuildEngine, name: str, failure: Failure, ref: str, *, log_dir: Path, say: Say
) -> None:
    """Stage name's state before its failure, tagged ref."""
    plan = chain.prepared(request, say)[1]
    stage = plan.stages[name]
    if missing := [p for p in stage.parents if not engine.image_id(plan.stages[p].tag())]:
        raise StackbuildError(f"stage {stage.name}'s parent {missing[0]} is not built: build {plan.stack} first")
    dockerfile = cut_before(stage.dockerfile, failure.command) if failure.command else stage.dockerfile
    if dockerfile is None:
        raise StackbuildError(f"stage {stage.name} failed ({failure.reason}), but at no step of its Dockerfile")
    say(f"[stackbuild] making its state before that step (cached steps; log: {log_dir})")
    builds = StageImages(plan, engine, request.cache, log_dir)
    log_file = builds.log_file(stage).with_suffix(".shell.log")
    # Cut before a failed step, the image never reached the step that adds its environment.
    before_failure = dataclasses.replace(
        stage, dockerfile=dockerfile, env_capture=None if failure.command else stage.env_capture
    )
    engine.tag(builds.build_state(before_failure, log_file), ref)
