"""A run user (the manifest's `user`) in the final images: made there with the manifest's IDs and the
lock's date, run as by number; no other stage moves, and `user: root` renders today's images."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from builder import manifest
from builder.inputs.project import Origin
from builder.manifest.model import ROOT, RunUser
from builder.plan.make import make_plan
from builder.plan.plan_model import Plan
from builder.plan.prepare import resolve_inputs
from tests.golden_plan import GOLDEN, golden_request
from tests.helpers import hadolint

FINALS = ("devel-image", "runtime-image")
USER = RunUser(name="HwHiAiUser", uid=1000, gid=1234)


def plan_as(user: object) -> Plan:
    """The golden stack's plan with the manifest's `user` set (as read from YAML), its lock resealed."""
    request = golden_request()
    data = request.manifest.model_dump(mode="json", by_alias=True) | {"user": user}
    loaded = manifest.Manifest.model_validate(data)
    locked = request.lock.model_copy(update={"manifest_sha256": manifest.manifest_digest(loaded)})
    request = dataclasses.replace(request, manifest=loaded, lock=locked)
    return make_plan(dataclasses.replace(resolve_inputs(request, say=print), origin=Origin()))


def test_a_run_user_moves_the_final_images_only() -> None:
    root, user = plan_as(ROOT), plan_as(USER.model_dump())
    moved = {name for name, stage in user.stages.items() if stage.key != root.stages[name].key}
    assert moved == set(FINALS)


def test_the_final_images_make_the_user_with_the_manifests_ids_and_run_as_it_by_number() -> None:
    plan = plan_as(USER.model_dump())
    epoch = plan.source_date_epoch
    for name in FINALS:
        lines = plan.stages[name].dockerfile.strip().splitlines()
        text = "\n".join(lines)
        assert f"RUN export SOURCE_DATE_EPOCH={epoch} \\" in lines, name  # shadow's date: the lock's
        assert " && groupadd --gid 1234 HwHiAiUser \\" in lines
        assert (
            " && useradd --uid 1000 --gid 1234 --no-log-init --create-home --home-dir /home/HwHiAiUser"
            " --shell /bin/bash HwHiAiUser" in lines
        )
        assert lines[-1] == "USER 1000:1234"  # the last instruction: every other one runs as root
        assert text.index("useradd") < text.index("COPY --from=")
        labels = 'org.stackbuild.user="HwHiAiUser"', 'org.stackbuild.user.uid="1000"', 'org.stackbuild.user.gid="1234"'
        assert all(label in text for label in labels)


def test_user_root_is_the_default_and_renders_todays_images() -> None:
    """`user: root` written out is the manifest without it (same digest, so its lock agrees) and gives the
    golden stage keys, Dockerfiles with no user in them."""
    request = golden_request()
    written = manifest.Manifest.model_validate(request.manifest.model_dump(mode="json", by_alias=True) | {"user": ROOT})
    assert manifest.manifest_digest(written) == manifest.manifest_digest(request.manifest)
    plan = plan_as(ROOT)
    assert {n: s.key for n, s in plan.stages.items()} == json.loads((GOLDEN / "keys.json").read_text())
    assert not any("useradd" in s.dockerfile or "\nUSER " in s.dockerfile for s in plan.stages.values())


def test_the_user_images_pass_hadolint(tmp_path: Path) -> None:
    plan = plan_as(USER.model_dump())
    files = []
    for name in FINALS:
        files.append(tmp_path / f"{name}.Dockerfile")
        files[-1].write_text(plan.stages[name].dockerfile)
    run = hadolint(files)
    assert run.returncode == 0, run.stdout + run.stderr
