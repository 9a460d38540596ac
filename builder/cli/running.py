"""`stackbuild run TAG [-- CMD]`: the image started with what this host can give it (its NPUs and
driver, found as CANN's own `docker run` names them), or the `docker run` line with --print."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys

from builder.cli.common import Context, say
from builder.model.errors import StackbuildError
from builder.verify.host import host_access, host_root


def cmd_run(ctx: Context, args: argparse.Namespace) -> int:
    access = host_access(host_root(), args.device)
    for note in access.notes:
        say(f"[stackbuild] note: {note}")
    interactive = ["-it"] if sys.stdin.isatty() and sys.stdout.isatty() else []
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    line = ["docker", "run", "--rm", *interactive, *access.docker_run_flags(), args.image, *command]
    if args.print:
        print(shlex.join(line))
        return 0
    docker = shutil.which("docker")
    if docker is None:
        raise StackbuildError("no docker command here: install docker.io (`python -m builder.hostsetup --docker`)")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(docker, [docker, *line[1:]])  # the container's exit code is the command's
