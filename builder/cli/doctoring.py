"""`stackbuild doctor [STACK | IMAGE]`: every check's verdict and remedy; the exit code says whether
this host can build and run the stack (or run the image, against the driver it was certified for)."""

from __future__ import annotations

import json
from pathlib import Path

from builder.cli.context import Context
from builder.cli.image_commands import DoctorArgs
from builder.cli.screen import doctor_lines, show
from builder.engine.registry_api import RegistryClient
from builder.handoff.contents import read_contents
from builder.handoff.doctor import (
    Certified,
    binfmt_checks,
    disk_checks,
    engine_check,
    host_checks,
    registry_check,
    runtime_check,
)
from builder.model.arch import Arch
from builder.model.settings import login_for

# What a build takes on disk: stage images of every layer plus the cached inputs (a real CANN toolkit
# is several GB, and lives in the toolkit stage, the devel image and the installer cache).
NEED_GB = {"huawei": 40.0, "cpusim": 8.0}


def cmd_doctor(ctx: Context, args: DoctorArgs) -> int:
    image = args.stack if args.stack and _an_image(ctx, args.stack) else None
    manifest = ctx.load(args.stack)[0] if args.stack and not image else None
    login = ctx.settings.credentials
    engine, about = engine_check(ctx.engine)
    certified = Certified.of_manifest(manifest) if manifest else None
    if image is not None:  # what it was built for, from its labels and the lock it carries
        certified = Certified.of_image(read_contents(ctx.engine(), image, Arch.host()))
    places = {"cached inputs": ctx.cache().root}
    if about and about.root and about.root.is_dir():  # a local engine: its images are on this disk
        places["images"] = about.root
    need = NEED_GB[manifest.toolkit.vendor] if manifest else max(NEED_GB.values())
    checks = [
        engine,
        runtime_check(about),
        *disk_checks(places, need, manifest.name if manifest else "the largest stack"),
        *binfmt_checks(manifest),
        registry_check(ctx.site().cache_registry, lambda host: RegistryClient(host, login_for(login, host))),
        *host_checks(ctx.settings.host_root, certified),
    ]
    failed = [c for c in checks if c.verdict == "fail"]
    subject = image or (manifest.name if manifest else None)
    if args.json:
        document = {"stack": manifest.name if manifest else None, "image": image, "can_run": not failed}
        print(json.dumps(document | {"checks": [c.as_json() for c in checks]}, indent=2))
    else:
        show(doctor_lines(checks, subject or "a stack"))
    return 1 if failed else 0


def _an_image(ctx: Context, given: str) -> bool:
    """Whether doctor's argument names an image (a tag a build printed) rather than a stack: no stack
    of the project and no manifest file has that name, and it has a tag's ':' or '/'."""
    return given not in ctx.stack_names() and not Path(given).is_file() and any(c in given for c in ":/@")
