"""The benchmark's BuildKit peer: the stack's graph as one multi-stage Dockerfile.

What a user would write instead of stackbuild: one Dockerfile whose stages form the same graph
(each component FROM the toolkit stage, copying what it depends on), built by BuildKit, which
runs independent stages in parallel. It is made from stackbuild's own rendered stages, so both
sides run the same commands on the same bases with the same inputs, and each stage runs
stackbuild's probes as a RUN step (the peer checks what stackbuild checks). Only the bases
stay stackbuild's images, prepared before timing on both sides.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

from builder.inputs.contexts import write_context
from builder.plan.plan_model import Plan, Stage
from builder.store.cache import Cache
from builder.verify.probes import RUNNER

# A rendered stage's parents header: `ARG <PARENT>_IMAGE=<tag>` and `FROM ${<PARENT>_IMAGE} AS <parent>`.
PARENT_HEADER = re.compile(r"^(ARG [A-Z0-9_]+_IMAGE=|FROM \$\{[A-Z0-9_]+_IMAGE\} AS |# stackbuild: parent stages)")
SOURCE = re.compile(r'^(COPY|ADD) (\["[^"]+"|[^ \[]+)')
BIND_SOURCE = re.compile(r"(--mount=type=bind,(?:[^ ]*,)?source=)([^, ]+)")  # a bind mount of the stage's context
# Runs the probes as stackbuild does (one runner, every probe), then fails unless each passed.
CHECK = (
    "import json, subprocess, sys; "
    "out = subprocess.run([sys.executable, '/tmp/peer-probes/runner.py', open('/tmp/peer-probes/probes.json').read()], "
    "capture_output=True, text=True).stdout; "
    "answers = json.loads(out.strip().splitlines()[-1]); "
    "bad = [a['message'] for a in answers if not a['ok']]; "
    "sys.exit('probe failed: ' + '; '.join(bad) if bad else 0)"
)


def compose(
    plan: Plan, cache: Cache, out: Path, env: Mapping[str, Mapping[str, str]], probes: bool = True
) -> list[str]:
    """out/Dockerfile and each stage's context under out/<stage>/; the final stages' names. env: what
    the environment scripts set in each stage that has them (stackbuild reads it from the built image
    and adds it as ENV; here it is written in, as a user copies it from the official images). Without
    probes: the hand-written peer, the same file without the probe steps."""
    # The bases are stackbuild's images on both sides; every other stage is one of this file's.
    parts = [f"FROM {stage.tag()} AS {stage.name}\n" for stage in plan.order() if stage.kind == "base"]
    for stage in plan.order():
        if stage.kind == "base":
            continue
        _context(stage, cache, out / stage.name, probes)
        parts.append(_stage_text(stage, env.get(stage.name, {}), probes))
    (out / "Dockerfile").write_text("\n".join(parts))
    return [name for name in plan.final_tags]


def _context(stage: Stage, cache: Cache, into: Path, probes: bool) -> None:
    into.mkdir(parents=True)
    write_context(into, stage.dockerfile, stage.context, cache)
    (into / "Dockerfile").unlink()
    if stage.probes and probes:
        (into / "peer-probes").mkdir()
        (into / "peer-probes" / "runner.py").write_text(RUNNER)
        (into / "peer-probes" / "probes.json").write_text(json.dumps(list(stage.probes)))


def _stage_text(stage: Stage, env: Mapping[str, str], probes: bool) -> str:
    lines = []
    # A stage's own stages (the runtime image's `cann-runtime`, which installs CANN's runtime subset):
    # named after the stage here, so that no two stages of this file share a name.
    own = {
        words[3]: f"{stage.name}-{words[3]}"
        for line in stage.dockerfile.splitlines()
        if not PARENT_HEADER.match(line) and len(words := line.split()) == 4 and words[0] == "FROM"
    }
    for line in stage.dockerfile.splitlines():
        if PARENT_HEADER.match(line):  # the parents are this file's stages of the same names
            continue
        if line.startswith("FROM "):
            words = line.split()
            line = f"FROM {own.get(words[1], words[1])} AS {own.get(words[-1], stage.name)}"
        elif line.startswith("COPY --from="):
            # From another stage of this file, by the same name, or from one of its own.
            source = line.split()[1].removeprefix("--from=")
            line = line.replace(f"--from={source} ", f"--from={own.get(source, source)} ", 1)
        elif match := SOURCE.match(line):
            source = match.group(2)
            moved = f'["{stage.name}/{source[2:]}' if source.startswith('["') else f"{stage.name}/{source}"
            line = line.replace(source, moved, 1)
        elif line.startswith("RUN --mount=type=bind,") and "from=" not in line.split()[1]:
            line = BIND_SOURCE.sub(lambda m: f"{m.group(1)}{stage.name}/{m.group(2)}", line, count=1)
        lines.append(line)
    if stage.env_capture is not None:  # the same stage goes on: its environment, entrypoint and command
        baked = stage.env_capture.dockerfile_with(env).splitlines()
        lines += [line for line in baked if not line.startswith(("ARG BUILT_IMAGE", "FROM ${BUILT_IMAGE}"))]
    if stage.probes and probes:
        lines += [
            f"COPY {stage.name}/peer-probes/ /tmp/peer-probes/",
            f'RUN cd {stage.probe_workdir} && python3 -c "{CHECK}" && rm -rf /tmp/peer-probes',
        ]
    return "\n".join(lines) + "\n"
