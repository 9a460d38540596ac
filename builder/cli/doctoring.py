"""`stackbuild doctor [STACK]`: every check's verdict and remedy; the exit code says whether this host
can build and run the stack."""

from __future__ import annotations

import json

from builder.cli.context import Context
from builder.cli.image_commands import DoctorArgs
from builder.cli.screen import doctor_lines, show
from builder.engine.registry_api import RegistryClient
from builder.handoff.doctor import binfmt_checks, disk_checks, engine_check, host_checks, registry_check
from builder.model.settings import login_for

# What a build takes on disk: stage images of every layer plus the cached inputs (a real CANN toolkit
# is several GB, and lives in the toolkit stage, the devel image and the installer cache).
NEED_GB = {"huawei": 40.0, "cpusim": 8.0}


def cmd_doctor(ctx: Context, args: DoctorArgs) -> int:
    manifest = ctx.load(args.stack)[0] if args.stack else None
    login = ctx.settings.credentials
    engine, about = engine_check(ctx.engine)
    places = {"cached inputs": ctx.cache().root}
    if about and about.root and about.root.is_dir():  # a local engine: its images are on this disk
        places["images"] = about.root
    need = NEED_GB[manifest.toolkit.vendor] if manifest else max(NEED_GB.values())
    checks = [
        engine,
        *disk_checks(places, need, manifest.name if manifest else "the largest stack"),
        *binfmt_checks(manifest),
        registry_check(ctx.site().cache_registry, lambda host: RegistryClient(host, login_for(login, host))),
        *host_checks(ctx.settings.host_root, manifest),
    ]
    failed = [c for c in checks if c.verdict == "fail"]
    if args.json:
        document = {"stack": manifest.name if manifest else None, "can_run": not failed}
        print(json.dumps(document | {"checks": [c.as_json() for c in checks]}, indent=2))
    else:
        show(doctor_lines(checks, manifest.name if manifest else "a stack"))
    return 1 if failed else 0
