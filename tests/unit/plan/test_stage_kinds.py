"""Where a new kind of stage goes (docs/architecture.md): a class meeting StageContributor, placed in
make.STAGE_KINDS after the kinds whose stages are its parents; make_plan itself does not change.
A toy kind adds one stage on the toolkit: it is planned, keyed and parented like any other, and the
stages that do not build on it keep their keys."""

from __future__ import annotations

import pytest

from builder.plan import make
from builder.plan.stage_kinds import Planning, StageGraph
from tests.golden_plan import golden_plan


class ToolkitNotes:
    """A stage of notes on the toolkit (the kind of stage is the components' here: a new kind would add
    its own name to plan_model.StageKind)."""

    def add_stages(self, planning: Planning, graph: StageGraph) -> None:
        dockerfile = f"FROM {graph.image('toolkit')}\nRUN echo {planning.lock.toolkit.version} > /notes\n"
        graph.add("toolkit-notes", "component", ("toolkit",), dockerfile)


def test_a_kind_of_stage_added_to_the_kinds_is_planned_keyed_and_parented(monkeypatch: pytest.MonkeyPatch) -> None:
    before = golden_plan()
    kinds = list(make.STAGE_KINDS)
    toolkit_at = next(i for i, kind in enumerate(kinds) if type(kind).__name__ == "ToolkitStage")
    monkeypatch.setattr(make, "STAGE_KINDS", (*kinds[: toolkit_at + 1], ToolkitNotes(), *kinds[toolkit_at + 1 :]))
    after = golden_plan()
    notes = after.stages["toolkit-notes"]
    assert notes.parents == ("toolkit",) and dict(notes.inputs.parents)["toolkit"] == before.stages["toolkit"].key
    assert "RUN echo" in notes.dockerfile and notes.key not in {s.key for s in before.stages.values()}
    assert list(after.stages) == [
        *list(before.stages)[: toolkit_at + 2],
        "toolkit-notes",
        *list(before.stages)[toolkit_at + 2 :],
    ]
    assert {n: s.key for n, s in after.stages.items() if n != "toolkit-notes"} == {
        n: s.key for n, s in before.stages.items()
    }
