"""Stage builds with BuildKit, through the docker CLI: docker-py has no BuildKit (docker/docker-py#2230).

The context is a directory the CLI sends file by file (BuildKit's file sync: no tarball written,
uploaded and unpacked again); the image id comes back through --iidfile and the image is never
tagged here (a builder killed mid-build leaves no tag: the stage is tagged after its probes).
Debian's docker 20.10 client has BuildKit built in; newer clients need the buildx plugin.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

from builder.engine.protocol import BuildFailed, BuildSpec, LogTail

# BuildKit's plain progress: "#7 0.412 output" (a step's output) or "#7 DONE 0.4s".
STEP_OUTPUT = re.compile(r"^#\d+ \d+\.\d+ ")
FAILED_RUN = re.compile(r"executor failed running \[(.*)\]: exit code: (\d+)")  # BuildKit in docker 20.10
FAILED_PROCESS = re.compile(r'process "(.*)" did not complete successfully: exit code: (\d+)')  # 23 and later
STEP_STATUS = re.compile(r"^#\d+ ")
BUILD_TIMEOUT = 6 * 3600
DEFAULT_HOST = "unix:///var/run/docker.sock"  # where docker-py goes without DOCKER_HOST


def find_cli(candidates: tuple[str | None, ...] | None = None) -> str | None:
    """A docker CLI whose `build` runs BuildKit: a client with it built in (20.10, e.g. Debian's
    /usr/bin/docker) or one with the buildx plugin; None without one."""
    seen = []
    for candidate in candidates or ("/usr/bin/docker", shutil.which("docker")):
        if not candidate or candidate in seen or not os.access(candidate, os.X_OK):
            continue
        seen.append(candidate)
        # "Docker version 20.10.24+dfsg1, build 297e128": the client's own, no daemon asked.
        version = _run([candidate, "--version"]).removeprefix("Docker version ")
        major = version.split(".", 1)[0]
        if major.isdigit() and int(major) < 23:  # the builder is built in before 23.0
            return candidate
        if _run([candidate, "buildx", "version"]):
            return candidate
    return None


def _run(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def build(
    cli: str,
    host: str | None,
    context: Path,
    log: Callable[[str], None],
    spec: BuildSpec,
) -> str:
    """Build the context directory with BuildKit; the image id."""
    tail = LogTail(log)

    # The daemon docker-py talks to, never another one a CLI context or a buildx builder points at.
    daemon = host or os.environ.get("DOCKER_HOST") or DEFAULT_HOST
    env = dict(os.environ, DOCKER_BUILDKIT="1", BUILDKIT_PROGRESS="plain", DOCKER_HOST=daemon)
    env.update(DOCKER_CONTEXT="default", BUILDX_BUILDER="default")
    with tempfile.TemporaryDirectory(prefix="stackbuild-iid-") as tmp:
        iidfile = Path(tmp) / "iid"
        command = [cli, "build", "--iidfile", str(iidfile), "--platform", spec.arch.platform, "--progress", "plain"]
        command += ["--network", "default" if spec.network else "none"]
        if spec.no_cache:
            command.append("--no-cache")
        for key, value in sorted(spec.labels.items()):
            command += ["--label", f"{key}={value}"]
        for key, value in sorted(spec.args.items()):
            command += ["--build-arg", f"{key}={value}"]
        try:
            process = subprocess.Popen(
                [*command, "--", str(context)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
            )
        except OSError as err:
            raise BuildFailed(f"cannot run {cli}: {err}", []) from err
        assert process.stdout is not None
        reader = threading.Thread(target=_follow, args=(process.stdout, tail), daemon=True)
        reader.start()
        try:
            code = process.wait(timeout=BUILD_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise BuildFailed(f"the build did not finish within {BUILD_TIMEOUT // 3600} h", tail.lines) from None
        finally:
            reader.join()  # the process is gone: its output ends, and the reader with it
            process.stdout.close()
        if code != 0:
            raise BuildFailed(failure(tail.lines, code), tail.lines)
        image_id = iidfile.read_text().strip() if iidfile.is_file() else ""
    if not image_id:
        raise BuildFailed("the builder reported no image id", tail.lines)
    return image_id


def _follow(stream: IO[bytes], keep: Callable[[str], None]) -> None:
    for raw in stream:  # a step's output as the step wrote it, without BuildKit's "#7 0.412 "
        keep(STEP_OUTPUT.sub("", raw.decode(errors="replace").rstrip("\n")))


def _unquoted(text: str) -> str:
    """BuildKit 23+ quotes the command as a Go string (\\" for a quote): the command as it ran."""
    try:
        unquoted = json.loads(f'"{text}"')
    except ValueError:
        return text
    return unquoted if isinstance(unquoted, str) else text


def failure(tail: list[str], code: int) -> str:
    """BuildKit's own summary of the failure (its last error line, without the gRPC wrapping); a
    failed RUN in the classic builder's words, so messages do not depend on the builder."""
    for line in reversed(tail):
        if run := FAILED_RUN.search(line):
            return f"The command '{run.group(1)}' returned a non-zero code: {run.group(2)}"
        if run := FAILED_PROCESS.search(line):
            return f"The command '{_unquoted(run.group(1))}' returned a non-zero code: {run.group(2)}"
    for line in reversed(tail):
        line = STEP_STATUS.sub("", line)
        if line.startswith(("failed to solve", "error:", "ERROR:")):
            return line.rpartition(" desc = ")[2] if " desc = " in line else line.partition(": ")[2]
    return f"the build exited with {code}"
