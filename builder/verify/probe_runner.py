"""Runs a stage's probes inside its image: `python3 -c <this file> PROBES_JSON` (one container for
set-env, one for the others).

Standard library only (it runs in the image's Python). Prints one JSON list of
{"ok": bool, "message": str}, one per probe, in order.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import struct
import subprocess
import sys
from typing import Any

ProbeSpec = dict[str, Any]
Outcome = tuple[bool, str]


def elf_section_size(path: str, name: str) -> int | str:
    """Size of the named section, or a string saying why there is none."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        return f"{path}: {err.strerror}"
    if data[:4] != b"\x7fELF" or data[4] != 2:
        return f"{path} is not an ELF64 file"
    shoff: int = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    strtab = struct.unpack_from("<IIQQQQIIQQ", data, shoff + shstrndx * shentsize)[4]
    for i in range(shnum):
        header = struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
        start = strtab + header[0]
        if data[start : data.index(b"\0", start)].decode() == name:
            size: int = header[5]
            return size
    return f"{path} has no {name} section"


def elf_section(probe: ProbeSpec) -> Outcome:
    size = elf_section_size(probe["file"], probe["section"])
    if isinstance(size, str):
        return False, size
    if size == 0:
        return False, f"{probe['section']} is empty in {probe['file']}"
    return True, f"{probe['section']}: {size} bytes"


def linked_from(probe: ProbeSpec) -> Outcome:
    run = subprocess.run(["ldd", "--", probe["file"]], capture_output=True, text=True)
    if run.returncode != 0:
        return False, f"ldd {probe['file']} failed: {(run.stdout + run.stderr).strip()}"
    resolved: dict[str, str] = {}
    for line in run.stdout.splitlines():
        if "=>" in line:
            lib, _, where = line.strip().partition("=>")
            resolved[lib.strip()] = where.strip().split(" (")[0]
    missing = [lib for lib, where in resolved.items() if where == "not found"]
    if missing:
        return False, f"{probe['file']} needs {', '.join(missing)}: not found"
    within = probe["within"].rstrip("/") + "/"
    for lib in probe["libraries"]:
        target = resolved.get(lib)
        if target is None:
            return False, f"{probe['file']} does not link {lib}"
        if not target.startswith(within):
            return False, f"{probe['file']} resolves {lib} to {target}, outside {probe['within']}"
    return True, ", ".join(f"{lib} -> {resolved[lib]}" for lib in probe["libraries"]) or "all resolve"


ELF_LOADABLE = (2, 3)  # e_type ET_EXEC, ET_DYN: what the loader maps (objects and archives are not)


def elf_files(roots: list[str]) -> list[str]:
    """The loadable ELF files under roots (regular files; links are reached through their targets)."""
    found = []
    for root in roots:
        for folder, _, names in os.walk(root):
            for name in names:
                path = os.path.join(folder, name)
                if os.path.islink(path) or not os.path.isfile(path):
                    continue
                try:
                    with open(path, "rb") as f:
                        head = f.read(18)
                except OSError:
                    continue
                if head[:4] == b"\x7fELF" and len(head) == 18:
                    order = "<" if head[5] == 1 else ">"
                    if struct.unpack_from(order + "H", head, 16)[0] in ELF_LOADABLE:
                        found.append(path)
    return sorted(found)


LDD_BATCH = 256  # files per ldd call: a CANN tree has thousands, each call a shell and a loader run


def ldd_missing(paths: list[str]) -> tuple[int, dict[str, list[str]]]:
    """(how many of paths the loader takes, {library not found: files needing it}), asking ldd for a batch
    of files at a time; it heads each file's lines with `<path>:` (with one file, none)."""
    taken = 0
    missing: dict[str, list[str]] = {}
    for start in range(0, len(paths), LDD_BATCH):
        batch = paths[start : start + LDD_BATCH]
        blocks: dict[str, list[str]] = {path: [] for path in batch}
        current = batch[0] if len(batch) == 1 else None
        run = subprocess.run(["ldd", "--", *batch], capture_output=True, text=True)
        for line in (run.stdout + run.stderr).splitlines():
            if line.endswith(":") and line[:-1] in blocks:
                current = line[:-1]
            elif current is not None:
                blocks[current].append(line.strip())
        for path, lines in blocks.items():
            if any("not a dynamic executable" in line or line.startswith("ldd:") for line in lines):
                continue  # another machine's file, or a static one: not this image's to load
            taken += 1
            for line in lines:
                lib, arrow, where = line.partition("=>")
                if arrow and where.strip() == "not found":
                    missing.setdefault(lib.strip(), []).append(path)
    return taken, missing


def closure(probe: ProbeSpec) -> Outcome:
    """Each library every ELF file needs resolves, asked of the loader itself (ldd) in this environment;
    one the loader cannot take (another machine's, a static file) is not this image's to load."""
    loaded, needed = ldd_missing(elf_files(probe["roots"]))
    provided = set(probe["provided"])
    by_host = sorted(lib for lib in needed if lib in provided)
    missing = {lib: paths for lib, paths in needed.items() if lib not in provided}
    if missing:
        return False, "; ".join(
            f"{lib} not found (needed by {', '.join(paths[:3])}{' and more' if len(paths) > 3 else ''})"
            for lib, paths in sorted(missing.items())
        )
    host = f"; left to the host's driver: {', '.join(by_host)}" if by_host else ""
    return True, f"{loaded} ELF files, each library they need found{host}"


def env(probe: ProbeSpec) -> Outcome:
    bad = [f"{v} is not set" for v in probe["set"] + probe["paths"] if not os.environ.get(v)]
    bad += [
        f"{v}={os.environ[v]} does not exist"
        for v in probe["paths"]
        if os.environ.get(v) and not os.path.exists(os.environ[v])
    ]
    return not bad, "; ".join(bad) or "all set"


def command(probe: ProbeSpec) -> Outcome:
    run = subprocess.run(["bash", "-c", probe["run"]], capture_output=True, text=True)
    output = run.stdout + run.stderr
    if run.returncode != probe["exit_code"]:
        tail = " | ".join(output.strip().splitlines()[-3:])
        return False, f"exit code {run.returncode}, expected {probe['exit_code']}: {tail}"
    if probe.get("expect") and not re.search(probe["expect"], output):
        return False, f"output does not match {probe['expect']!r}"
    return True, f"exit code {run.returncode}"


# Variables bash sets itself: not the scripts'.
BASH_OWN = frozenset({"PWD", "OLDPWD", "SHLVL", "_"})


def environment_of(scripts: list[list[Any]], environment: dict[str, str]) -> dict[str, str]:
    """The variables a bash with only this environment has after sourcing the scripts ([path, always]:
    one not always installed is sourced where present)."""
    lines = []
    for script, always in scripts:
        source = f"source {shlex.quote(script)} >/dev/null || exit 1"
        lines.append(source if always else f"if [ -f {shlex.quote(script)} ]; then {source}; fi")
    lines.append("exec python3 -c 'import json, os; print(json.dumps(dict(os.environ)))'")
    given = [f"{name}={value}" for name, value in environment.items()]
    command = ["env", "-i", *given, "bash", "--noprofile", "--norc", "-c", "\n".join(lines)]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"cannot source {', '.join(s for s, _ in scripts)}: {run.stderr.strip()[-200:]}")
    found: dict[str, str] = json.loads(run.stdout)
    return found


def tidied(name: str, value: str) -> str:
    """A search path (a variable named *PATH: PATH, PYTHONPATH, LD_LIBRARY_PATH, CMAKE_PREFIX_PATH) as
    it is baked: without empty entries (each means the current directory) and each entry once, where
    it first came (scripts that prepend to an empty variable leave a trailing ':'; two sourcings, a
    second copy). The lookups it gives are the same but for the current directory's."""
    if not name.endswith("PATH") or ":" not in value:
        return value
    return ":".join(dict.fromkeys(entry for entry in value.split(":") if entry))


def without_toolkit(root: str) -> dict[str, str]:
    """This process's environment as it was before the scripts' values were baked in: every entry
    under the install root taken out of each variable (one left empty is dropped)."""
    kept = {}
    for name, value in os.environ.items():
        entries = [e for e in value.split(":") if not (e == root.rstrip("/") or e.startswith(root))]
        if entries and any(entries):
            kept[name] = ":".join(entries)
    return kept


def set_env(probe: ProbeSpec) -> Outcome:
    """Each variable the scripts set has, in the image's ENV, the value they give it when sourced on
    that ENV without the toolkit's entries (what the image's ENV was before they were baked)."""
    root = probe["root"].rstrip("/") + "/"
    before = without_toolkit(root)
    try:
        clean, sourced = environment_of([], before), environment_of(probe["scripts"], before)
    except RuntimeError as err:
        return False, str(err)
    problems = []
    for var, value in sorted(sourced.items()):
        if var in BASH_OWN or clean.get(var) == value or os.environ.get(var) == tidied(var, value):
            continue
        if var in os.environ:
            problems.append(f"{var} is {os.environ[var]} in ENV but {value} from the scripts")
        else:
            problems.append(f"{var} is not in ENV (the scripts set {value})")
    return not problems, "; ".join(problems) or "ENV is what the scripts set"


def imports(probe: ProbeSpec) -> Outcome:
    failed = []
    for module in probe["modules"]:
        # From /: a module found only in the source tree (the probe's working directory) is not provided.
        run = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, cwd="/")
        if run.returncode != 0:
            last = (run.stderr.strip().splitlines() or ["no output"])[-1]
            failed.append(f"cannot import {module}: {last}")
    return not failed, "; ".join(failed) or f"{', '.join(probe['modules'])} import"


def exists(probe: ProbeSpec) -> Outcome:
    missing = [p for p in probe["paths"] if not os.path.lexists(p)]
    return not missing, f"not installed: {', '.join(missing)}" if missing else "all present"


KINDS = {
    "elf-section": elf_section,
    "linked-from": linked_from,
    "env": env,
    "command": command,
    "set-env": set_env,
    "exists": exists,
    "imports": imports,
    "closure": closure,
}


def main() -> None:
    results: list[dict[str, Any]] = []
    for probe in json.loads(sys.argv[1]):
        try:
            ok, message = KINDS[probe["kind"]](probe)
        except Exception as err:  # a probe that crashes is a failed probe, with the reason
            ok, message = False, f"{type(err).__name__}: {err}"
        results.append({"ok": ok, "message": message})
    print(json.dumps(results))


if __name__ == "__main__":
    main()
