"""The stage kinds every stack shares before its components: the two bases (the OS, devel and
runtime) and the toolkit (CANN installed on the devel base)."""

from __future__ import annotations

from builder.model.layout import toolkit_layout
from builder.plan import compile_cache, render
from builder.plan.stage_kinds import Planning, StageGraph, files_of, joined
from builder.verify import probes as probe_specs


class BaseStages:
    """base-devel, then base-runtime: the bootstrapped or pinned OS with the locked .debs of each."""

    def add_stages(self, planning: Planning, graph: StageGraph) -> None:
        inputs, lock = planning.inputs, planning.lock
        python = probe_specs.python_probe(inputs.request.manifest.platform.python)
        for flavor in ("devel", "runtime"):
            name = f"base-{flavor}"
            dockerfile = render.base(flavor, lock, files_of(inputs.debs.get(name)))
            located = joined(inputs.bases[flavor], inputs.debs.get(name))
            hosts = (("etc-hosts", ""),)  # /etc/hosts: see base.Dockerfile.j2
            graph.add(name, "base", (), dockerfile, located, (python,), files=hosts, plain=frozenset({"etc-hosts"}))


class ToolkitStage:
    """The toolkit: CANN's installer packages on the devel base, its environment set by CANN's scripts."""

    def add_stages(self, planning: Planning, graph: StageGraph) -> None:
        inputs, lock = planning.inputs, planning.lock
        packages = lock.section(inputs.request.arch).packages
        wrappers = compile_cache.wrapper_files() if inputs.request.manifest.compile_cache else ()
        dockerfile = render.toolkit(lock, graph.image("base-devel"), packages, compilers=bool(wrappers))
        probes = probe_specs.toolkit_probes(toolkit_layout(lock.toolkit.version))
        env = render.environment("toolkit", lock)
        graph.add(
            "toolkit", "toolkit", ("base-devel",), dockerfile, inputs.packages, probes, files=wrappers, env_capture=env
        )
