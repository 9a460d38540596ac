"""What changed since a stage's last recorded build: the reasons `plan` and `build` print."""

from __future__ import annotations

from dataclasses import asdict

from builder.plan.plan_model import Plan, Stage
from builder.store.cache import Cache

RECORD_KIND = "builds"


def record_build(cache: Cache, plan: Plan, stage: Stage) -> None:
    source = {"source": asdict(stage.source)} if stage.source else {}
    cache.records.write(
        {"key": stage.key, "inputs": stage.inputs.as_record(), **source},
        RECORD_KIND,
        plan.stack.lower(),
        plan.arch.value,
        stage.name,
    )


def _context_change(stage: Stage, old: dict[str, object], old_source: dict[str, object] | None) -> str | None:
    new = stage.inputs.context
    if old.get("sha256") == new.sha256:
        return None
    if stage.source is not None and old_source is not None:  # the source's own digest, as the drift note has it
        if old_source.get("sha256") == stage.source.sha256:
            return f"{stage.name}: its system or Python packages changed"
        return (
            f"{stage.name}: {stage.source.what} {str(old_source.get('sha256', ''))[:12]} -> {stage.source.sha256[:12]}"
        )
    label = new.what or "context"
    return f"{stage.name}: {label} {str(old.get('sha256', ''))[:12]} -> {new.sha256[:12]}"


def why(cache: Cache, plan: Plan, stage: Stage) -> str:
    """Why a stage that is not cached must build, against its last recorded build."""
    last = cache.records.read(RECORD_KIND, plan.stack.lower(), plan.arch.value, stage.name)
    if last is None:
        return "never built here"
    if last.get("key") == stage.key:
        return "image missing (removed since it was built)"
    old, new = last.get("inputs") or {}, stage.inputs
    reasons = []
    if old.get("platform") != new.platform:
        reasons.append(f"platform {old.get('platform')} -> {new.platform}")
    if (context := _context_change(stage, old.get("context") or {}, last.get("source"))) is not None:
        reasons.append(context)
    old_parents = dict(tuple(p) for p in old.get("parents") or [])
    changed = [name for name, key in new.parents if old_parents.get(name) != key]
    if changed:
        reasons.append(f"{stage.name}: parent {', '.join(changed)} rebuilt")
    elif old.get("dockerfile") != new.dockerfile:
        reasons.append(f"{stage.name}: Dockerfile changed (manifest or templates)")
    if old.get("probes") != new.probes:
        reasons.append(f"{stage.name}: probes changed")
    return "; ".join(reasons) or "inputs changed"
