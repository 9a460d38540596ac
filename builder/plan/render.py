"""Render the stages' Dockerfiles from the Jinja2 templates shipped in this package (templates/).

The output depends only on what is passed in (lock, manifest, parents' image references),
so the same lock renders byte-identical Dockerfiles.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.inputs import base_kinds
from builder.inputs.bootstrap import Flavor
from builder.inputs.package_forms import installer_name
from builder.inputs.source_kinds import kind_of
from builder.lock.locked import (
    Lock,
    LockedPackage,
    LockedSource,
)
from builder.manifest.model import Manifest
from builder.model.layout import ASCEND_ROOT, STACK_ROOT, stack_dir, toolkit_layout
from builder.plan.compile_cache import TOOL_ENTRY, WRAPPERS
from builder.plan.plan_model import BAKED_ENV, EnvCapture
from builder.plan.templating import templates

# Installer flags per package role: what the official images (cann-container-image's 8.5.0 Dockerfile
# l.72-98) and Huawei's installer (ascend-deployer install_cann.py) pass, toolkit included (a 2024 docs
# comment said --full for the toolkit; no script of Huawei's does).
INSTALL_FLAGS = {
    "toolkit": "--install --quiet --install-for-all",
    "ops": "--install --quiet --install-for-all",
    "nnal": "--install --quiet --install-for-all",
}
PACKAGE_ORDER = {"toolkit": 0, "ops": 1, "nnal": 2}
# CANN's runtime-only install: from 8.5.0 the toolkit .run with --whitelist=nnrt (no separate nnrt
# package), then the ops package into its tree, as ascend-deployer installs nnrt (install_cann.py
# l.485-516, install_kernels); NNAL is not supported on an nnrt-only install (hiascend ATB docs).
RUNTIME_ONLY = {"toolkit": "--whitelist=nnrt", "ops": ""}
STEPS_ROOT = "/opt/stackbuild/steps"
INSTALLS_ROOT = "/opt/stackbuild/installs"
INSTALLS_SCRIPT = (Path(__file__).parent / "templates" / "installs.py").read_text()


def render(template: str, **values: Any) -> str:
    return templates.get_template(f"{template}.Dockerfile.j2").render(**values)


def env_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def env_block(pairs: Sequence[tuple[str, str]]) -> str:
    """ENV instructions for the variables, in order, as few as Docker's rules allow.

    One ENV instruction sees the values from before it, so a variable that refers to one set
    in the same instruction (or is set twice) starts a new instruction.
    """
    groups: list[list[tuple[str, str]]] = []
    names: set[str] = set()
    for name, value in pairs:
        refers = any(f"${n}" in value or f"${{{n}" in value for n in names)
        if not groups or refers or name in names:
            groups.append([])
            names = set()
        groups[-1].append((name, value))
        names.add(name)
    return "\n".join("ENV " + " \\\n    ".join(f'{n}="{env_value(v)}"' for n, v in group) for group in groups)


@dataclass(frozen=True)
class RuntimeImages:
    """The images a runtime image is made from: its base, the base CANN's runtime subset is installed on
    (the devel base, which has what the installers need) and the toolkit stage's (earlier releases)."""

    base: str
    install_base: str
    toolkit: str


# The build stage inside runtime.Dockerfile.j2 that installs CANN's runtime subset.
CANN_RUNTIME_STAGE = "cann-runtime"


@dataclass(frozen=True)
class PackageStep:
    kind: str
    installer: str  # the .run, mounted from the context (a signed zip's, verified on the host)
    flags: str


def package_steps(packages: Sequence[LockedPackage], runtime_only: bool = False) -> list[PackageStep]:
    """The install steps, in CANN's order; runtime_only: the runtime subset's (RUNTIME_ONLY)."""
    ordered = sorted(packages, key=lambda p: PACKAGE_ORDER[p.role])
    if runtime_only:
        return [
            PackageStep(p.role, installer_name(p.file), f"{INSTALL_FLAGS[p.role]} {RUNTIME_ONLY[p.role]}".strip())
            for p in ordered
            if p.role in RUNTIME_ONLY
        ]
    return [PackageStep(p.role, installer_name(p.file), INSTALL_FLAGS[p.role]) for p in ordered]


def base(flavor: Flavor, lock: Lock, debs: Sequence[str] = ()) -> str:
    """debs: the stack's system packages for this base (.deb file names in install order)."""
    kind = base_kinds.kind_of(lock.base)
    return render(
        "base",
        flavor=flavor,
        image=kind.pinned_image(lock.base),
        origin=kind.origin(lock.base),
        debs=debs,
        source_date_epoch=lock.base.source_date_epoch,  # the template reads it for a pulled image only
    )


def toolkit(lock: Lock, base_image: str, packages: Sequence[LockedPackage], compilers: bool = False) -> str:
    """compilers: with the compile cache's compiler wrappers (builder.plan.compile_cache)."""
    layout = toolkit_layout(lock.toolkit.version)
    return render(
        "toolkit",
        base_image=base_image,
        compilers=WRAPPERS if compilers else None,
        packages=package_steps(packages),
        layout=layout,
        version=lock.toolkit.version,
        source_date_epoch=lock.base.source_date_epoch,
    )


def entrypoint(scripts: Sequence[tuple[str, bool]]) -> list[str]:
    """The images' ENTRYPOINT: the environment scripts sourced (those not always installed, where
    present), then the command; as the official images' ENTRYPOINT does it."""
    quoted = [(shlex.quote(path), always) for path, always in scripts]
    steps = [f"source {path}" if always else f"{{ [ ! -f {path} ] || source {path}; }}" for path, always in quoted]
    return ["/bin/bash", "-c", " && ".join([*steps, 'exec "$@"']), "--"]


def environment(
    stage: str, lock: Lock, after: Sequence[tuple[str, str]] = (), components: Sequence[str] = ()
) -> EnvCapture:
    """How the stage's environment enters its image once built: the release's scripts sourced in it,
    then the components' own (paths in the image), what they set baked as ENV, then the stage's own
    variables (after) and the entrypoint."""
    scripts = (*toolkit_layout(lock.toolkit.version).env_scripts(), *((path, True) for path in components))
    capture = templates.get_template("env-capture.sh.j2").render(scripts=scripts, root=f"{ASCEND_ROOT}/")
    dockerfile = templates.get_template("env.Dockerfile.j2").render(
        stage=stage,
        scripts=[path for path, _ in scripts],
        baked=BAKED_ENV,
        after=env_block(after),
        entrypoint=entrypoint(scripts),
    )
    return EnvCapture(capture, dockerfile)


def python_dir(component_id: str) -> str:
    """Where a component's python_packages are installed (inside its directory, so they travel with it)."""
    return f"{stack_dir(component_id)}/.python-packages"


def component_env(manifest: Manifest, ids: Sequence[str]) -> list[tuple[str, str]]:
    """The components' ENV, in order; a component's Python packages on PYTHONPATH before its own variables."""
    pairs = []
    for cid in ids:
        comp = manifest.component(cid)
        if comp.python_packages:
            pairs.append(("PYTHONPATH", python_dir(cid) + "${PYTHONPATH:+:$PYTHONPATH}"))
        pairs.extend(comp.env.items())
    return pairs


def component_scripts(manifest: Manifest, ids: Sequence[str], runtime: bool = False) -> list[str]:
    """Where the components' own environment scripts are in an image, in build order; runtime: only
    those the runtime image gets (inside a runtime artifact)."""
    paths = []
    for cid in ids:
        comp = manifest.component(cid)
        for script in comp.env_scripts:
            artifact = comp.artifact_of(script)
            if artifact is not None and (artifact.runtime or not runtime):
                paths.append(f"{stack_dir(cid)}/{script}")
    return paths


def installs_dir(component_id: str) -> str:
    """Where a component's stage keeps what its build added to its install paths (installs.py)."""
    return f"{INSTALLS_ROOT}/{component_id}"


def copies(manifest: Manifest, components: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """What a stage takes from the stages of these components: each one's declared artifacts, its
    Python packages, and what its build added to its install paths; never its sources, its build
    tree or its parents' files again."""
    taken = []
    for cid, image in components:
        comp = manifest.component(cid)
        paths = [f"{stack_dir(cid)}/{a.path}" for a in comp.artifacts]
        paths += [python_dir(cid)] if comp.python_packages else []
        taken += [{"path": path, "to": path, "image": image} for path in paths]
        if comp.installs:
            taken.append({"path": f"{installs_dir(cid)}/", "to": "/", "image": image})
    return taken


def component_files(manifest: Manifest, component_id: str, deps: Sequence[str] = ()) -> tuple[tuple[str, str], ...]:
    """(context path, text) of the scripts a component's build runs: build.sh and one file per step;
    deps: the components it needs, whose environment scripts build.sh sources first."""
    comp = manifest.component(component_id)
    if not comp.build and not comp.artifacts:
        return ()
    steps_dir = f"{STEPS_ROOT}/{component_id}"
    steps = []
    files = [("steps/installs.py", INSTALLS_SCRIPT)] if comp.installs else []
    for n, text in enumerate(comp.build, start=1):
        first = text.strip().splitlines()[0] if text.strip() else ""
        summary = f"{n}/{len(comp.build)}: {first[:100]}{' ...' if len(first) > 100 or text.strip() != first else ''}"
        steps.append({"summary": summary, "path": f"{steps_dir}/step-{n}.sh"})
        files.append((f"steps/step-{n}.sh", text if text.endswith("\n") else text + "\n"))
    build = templates.get_template("build.sh.j2").render(
        id=component_id,
        stack_dir=stack_dir(component_id),
        env_scripts=component_scripts(manifest, deps),
        steps=steps,
        artifacts=[a.path for a in comp.artifacts],
        installs=[i.path for i in comp.installs],
        installs_script=f"{steps_dir}/installs.py",
        installs_record=f"/tmp/stackbuild-installs-{component_id}.json",
        installs_dir=installs_dir(component_id),
        compile_cache={"wrappers": WRAPPERS, "tool": TOOL_ENTRY} if manifest.compile_cache else None,
    )
    return (("steps/build.sh", build), *files)


def component(
    manifest: Manifest,
    lock: Lock,
    component_id: str,
    toolkit_image: str,
    deps: Sequence[tuple[str, str]],
    debs: Sequence[str] = (),
) -> str:
    """deps: (id, image) of every component this one needs, in build order; debs: .deb files to install."""
    comp = manifest.component(component_id)
    has_build = bool(comp.build or comp.artifacts)  # what component_files writes scripts for
    return render(
        "component",
        id=component_id,
        source=_pin(lock.component(component_id).source),
        source_date_epoch=lock.base.source_date_epoch,
        toolkit_image=toolkit_image,
        deps=copies(manifest, deps),
        env=env_block(component_env(manifest, [d for d, _ in deps] + [component_id])),
        stack_dir=stack_dir(component_id),
        steps_dir=f"{STEPS_ROOT}/{component_id}",
        build_script=f"{STEPS_ROOT}/{component_id}/build.sh" if has_build else "",
        network=comp.network,
        debs=debs,
        python_dir=python_dir(component_id) if comp.python_packages else "",
    )


def _label_value(value: str) -> str:
    return json.dumps(value).replace("$", "\\$")


def about(labels: Mapping[str, str], lock_source: str, lock_target: str) -> str:
    """The final images' last instructions: the lock copied in, and one LABEL instruction."""
    lines = [f"COPY {json.dumps([lock_source, lock_target])}"]
    # Quoted as JSON strings (no newline or quote gets out), `$` escaped: LABEL expands variables.
    pairs = [f"{key}={_label_value(value)}" for key, value in labels.items()]
    lines.append("LABEL " + " \\\n      ".join(pairs))
    return "\n".join(lines)


def devel(
    manifest: Manifest,
    toolkit_image: str,
    components: Sequence[tuple[str, str]],
    source_date_epoch: int,
    debs: Sequence[str] = (),
    about: str = "",
) -> str:
    """source_date_epoch: the lock's, what the run user's shadow entry is dated (user.j2)."""
    return render(
        "devel",
        about=about,
        debs=debs,
        toolkit_image=toolkit_image,
        components=copies(manifest, components),
        env=env_block(component_env(manifest, [c for c, _ in components])),
        user=manifest.run_user,
        source_date_epoch=source_date_epoch,
    )


def runtime_installs(lock: Lock, packages: Sequence[LockedPackage]) -> bool:
    """Whether the runtime image installs CANN's runtime subset itself (8.5.0 and later, from the
    packages) rather than copying the toolkit stage's whole tree (earlier releases ship the runtime
    as a separate nnrt package, which stackbuild does not take; a base with CANN preinstalled)."""
    return toolkit_layout(lock.toolkit.version).name == "cann" and bool(packages)


def runtime(
    manifest: Manifest,
    lock: Lock,
    images: RuntimeImages,
    installs: Sequence[LockedPackage],
    components: Sequence[tuple[str, str]],
    about: str = "",
) -> str:
    """installs: the packages CANN's runtime subset is installed from (see runtime_installs); none: the
    toolkit stage's tree is copied."""
    layout = toolkit_layout(lock.toolkit.version)
    artifacts = (
        [
            {"image": image, "path": f"{STACK_ROOT}/{cid}/{a.path}", "to": f"{STACK_ROOT}/{cid}/{a.path}"}
            for cid, image in components
            for a in manifest.component(cid).artifacts
            if a.runtime
        ]
        + [
            {"image": image, "path": installs_dir(cid) + i.path, "to": i.path}
            for cid, image in components
            for i in manifest.component(cid).installs
            if i.runtime
        ]
        + [
            {"image": image, "path": python_dir(cid), "to": python_dir(cid)}
            for cid, image in components
            if manifest.component(cid).python_packages and manifest.component(cid).reaches_runtime
        ]
    )
    return render(
        "runtime",
        base_image=images.base,
        install_base_image=images.install_base,
        cann_image=CANN_RUNTIME_STAGE if installs else images.toolkit,
        packages=package_steps(installs, runtime_only=True),
        layout=layout,
        source_date_epoch=lock.base.source_date_epoch,
        artifacts=artifacts,
        about=about,
        user=manifest.run_user,
    )


def _pin(source: LockedSource) -> str:
    return kind_of(source).describe(source).pin
