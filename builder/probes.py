"""Probes: checks run in a container of a stage just built, for the known silent failures.

Built-in kinds (declared per component in the manifest):
  elf-section  the section exists in the file and is not empty (empty kernel metadata)
  linked-from  every shared library the file needs resolves, and the named ones resolve
               inside a directory (the runtime linked against a stray ACL copy)
  env          variables are set / name paths that exist
  command      a command exits with the expected code and prints what is expected
and, for the toolkit stage, set-env: the ENV baked into the image covers everything the
toolkit's set_env.sh exports. Each probe runs one Python or shell snippet in the image.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

from builder.engine import Engine
from builder.manifest import CommandProbe, ElfSectionProbe, EnvProbe, LinkedFromProbe, Probe
from builder.render import STACK_ROOT, TOOLKIT_ROOT

# Reads ELF64 section headers with the standard library only (images need no binutils).
ELF_SECTION_SIZE = r"""
import struct, sys
path, name = sys.argv[1], sys.argv[2]
try:
    data = open(path, "rb").read()
except OSError as err:
    print("missing: %s" % err.strerror); sys.exit(0)
if data[:4] != b"\x7fELF" or data[4] != 2:
    print("not-elf"); sys.exit(0)
shoff, = struct.unpack_from("<Q", data, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
def header(i):
    return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
strtab = header(shstrndx)[4]
for i in range(shnum):
    h = header(i)
    end = data.index(b"\0", strtab + h[0])
    if data[strtab + h[0]:end].decode() == name:
        print("size: %d" % h[5]); sys.exit(0)
print("absent")
"""

ENV_DUMP = "import json, os; print(json.dumps(dict(os.environ)))"


@dataclass(frozen=True)
class ProbeResult:
    name: str
    ok: bool
    message: str


def describe(probe: Probe) -> str:
    if isinstance(probe, ElfSectionProbe):
        return f"elf-section {probe.section} in {probe.file}"
    if isinstance(probe, LinkedFromProbe):
        return f"linked-from {probe.file} within {probe.within}"
    if isinstance(probe, EnvProbe):
        return f"env {' '.join(probe.set + probe.paths)}"
    return f"command {probe.run}"


def run_probe(engine: Engine, image: str, component: str, probe: Probe) -> ProbeResult:
    workdir = f"{STACK_ROOT}/{component}"
    name = describe(probe)
    if isinstance(probe, ElfSectionProbe):
        out = engine.run(image, ["python3", "-c", ELF_SECTION_SIZE, probe.file, probe.section], workdir=workdir)
        answer = out.output.strip()
        if answer.startswith("size: ") and int(answer.split()[1]) > 0:
            return ProbeResult(name, True, f"{probe.section}: {answer.split()[1]} bytes")
        problem = {
            "absent": f"{probe.file} has no {probe.section} section",
            "not-elf": f"{probe.file} is not an ELF64 file",
        }.get(answer, f"{probe.section} is empty in {probe.file}" if answer == "size: 0" else answer)
        return ProbeResult(name, False, problem)
    if isinstance(probe, LinkedFromProbe):
        out = engine.run(image, ["ldd", probe.file], workdir=workdir)
        if out.exit_code != 0:
            return ProbeResult(name, False, f"ldd {probe.file} failed: {out.output.strip()}")
        resolved = {}
        for line in out.output.splitlines():
            if "=>" in line:
                lib, _, where = line.strip().partition("=>")
                resolved[lib.strip()] = where.strip().split(" (")[0]
        missing = [lib for lib, where in resolved.items() if where == "not found"]
        if missing:
            return ProbeResult(name, False, f"{probe.file} needs {', '.join(missing)}: not found")
        for lib in probe.libraries:
            target = resolved.get(lib)
            if target is None:
                return ProbeResult(name, False, f"{probe.file} does not link {lib}")
            if not target.startswith(probe.within.rstrip("/") + "/"):
                return ProbeResult(name, False, f"{probe.file} resolves {lib} to {target}, outside {probe.within}")
        return ProbeResult(name, True, ", ".join(f"{lib} -> {resolved[lib]}" for lib in probe.libraries))
    if isinstance(probe, EnvProbe):
        check = (
            "import json, os, sys\n"
            f"want_set, want_paths = {probe.set!r}, {probe.paths!r}\n"
            "bad = [f'{v} is not set' for v in want_set + want_paths if not os.environ.get(v)]\n"
            "bad += [f'{v}={os.environ[v]} does not exist' for v in want_paths"
            " if os.environ.get(v) and not os.path.exists(os.environ[v])]\n"
            "print(json.dumps(bad))\n"
        )
        out = engine.run(image, ["python3", "-c", check], workdir=workdir)
        problems = json.loads(out.output.strip() or '["probe printed nothing"]')
        return ProbeResult(name, not problems, "; ".join(problems) or "all set")
    assert isinstance(probe, CommandProbe)
    out = engine.run(image, ["bash", "-c", probe.run], workdir=workdir)
    if out.exit_code != probe.exit_code:
        tail = " | ".join(out.output.strip().splitlines()[-3:])
        return ProbeResult(name, False, f"exit code {out.exit_code}, expected {probe.exit_code}: {tail}")
    if probe.expect and not re.search(probe.expect, out.output):
        return ProbeResult(name, False, f"output does not match {probe.expect!r}")
    return ProbeResult(name, True, f"exit code {out.exit_code}")


def set_env_probe(engine: Engine, image: str) -> ProbeResult:
    """The image's ENV covers every path element set_env.sh exports."""
    script = f"{TOOLKIT_ROOT}/set_env.sh"
    python_dump = f"python3 -c {shlex.quote(ENV_DUMP)}"
    sourced_dump = shlex.quote(f"source {script} >/dev/null && {python_dump}")
    # A clean bash has a default PATH it does not export: export it so it compares.
    clean_dump = shlex.quote(f"export PATH && {python_dump}")
    dump = f"env -i bash -c {sourced_dump} && env -i bash -c {clean_dump} && {python_dump}"
    out = engine.run(image, ["bash", "-c", dump])
    lines = out.output.strip().splitlines()
    if out.exit_code != 0 or len(lines) != 3:
        return ProbeResult("set-env", False, f"cannot source {script}: {out.output.strip()[-200:]}")
    sourced, clean, image_env = (json.loads(line) for line in lines)
    problems = []
    # Compare only what sourcing adds to a clean bash (bash has its own default PATH).
    for var, value in sourced.items():
        before = clean.get(var, "").split(":")
        have = image_env.get(var, "").split(":")
        missing = [part for part in value.split(":") if part and part not in before and part not in have]
        if missing:
            problems.append(f"{var} lacks {':'.join(missing)}")
    return ProbeResult("set-env", not problems, "; ".join(problems) or "ENV matches set_env.sh")
