"""Compatibility check: toolkit version x chip x host driver x OS x Python, before any download.

Known-bad combinations are errors (unless allowed); combinations the data does not cover are
warnings. The data is the CANN catalog (builder.catalog).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from builder.manifest import catalog
from builder.manifest.components import Component
from builder.manifest.model import Manifest
from builder.manifest.toolkit import PACKAGE_ROLES
from builder.manifest.upstream import upstream_of
from builder.manifest.versions import version_key
from builder.model import plugins

# Official CANN images' OSes (Ascend/cann-container-image).
OFFICIAL_OSES = {("ubuntu", "22.04"), ("ubuntu", "24.04"), ("openeuler", "22.03"), ("openeuler", "24.03")}
# tilelang-ascend needs Python >= 3.10 (shared/ascend-facts.md); CANN's own range is not in the data.
MIN_PYTHON = (3, 10)
# The python3 each distribution ships. A bootstrapped base gets exactly this one; an image base
# has it unless the image installs another (the official CANN images build their own).
DISTRIBUTION_PYTHON = {
    ("debian", "12"): "3.11",
    ("debian", "13"): "3.13",
    ("ubuntu", "22.04"): "3.10",
    ("ubuntu", "24.04"): "3.12",
    ("openeuler", "22.03"): "3.9",
    ("openeuler", "24.03"): "3.11",
}


@dataclass
class Report:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)  # what was compared with what, whatever the verdict

    @property
    def ok(self) -> bool:
        return not self.errors


def check(manifest: Manifest) -> Report:
    report = Report()
    toolkit = manifest.toolkit
    if toolkit.vendor == "cpusim":
        report.notes.append("CPU simulation (reference stack): no CANN compatibility data applies")
        return report
    release = catalog.release(toolkit.version)
    if release is None:
        known = ", ".join(sorted(catalog.releases(), key=version_key))
        report.warnings.append(f"CANN {toolkit.version} is not in the catalog (known: {known}); cannot check it")
        return report
    if toolkit.chip not in release.chips:
        report.errors.append(
            f"CANN {toolkit.version} does not support chip {toolkit.chip}: it is released for "
            f"{', '.join(release.chips)} only ({release.source}){_release_for(toolkit.chip)}"
        )
    report.checked.append(f"chip {toolkit.chip} among those CANN {toolkit.version} is released for ({release.source})")
    _check_host(manifest, release, report)
    _check_platform(manifest, report)
    platform = manifest.platform
    report.checked.append(
        f"OS {platform.os} {platform.os_version}, Python {platform.python} against the official images and the OS"
    )
    if release.files and (compared := _check_packages(manifest, release, report)):
        report.checked.append(f"{', '.join(compared)}: file name and sha256 against the catalog")
    if upstreams := _check_components(manifest, report):
        report.checked.append(f"{', '.join(upstreams)} against their upstreams' CANN and chip needs")
    if pins := _check_frameworks(manifest, report):
        report.checked.append(f"{', '.join(pins)} against ascend-deployer's pairings for CANN {toolkit.version}")
    return report


def _check_frameworks(manifest: Manifest, report: Report) -> list[str]:
    """A torch-npu pin the catalog does not pair with the stack's CANN release is an error naming both
    versions and the ones it does pair (ascend-deployer's version_match.json); the pins compared."""
    version = manifest.toolkit.version
    pairs = catalog.framework_pairs("Torch-npu")
    paired = catalog.paired_torch_npu(version)
    compared = []
    for comp in manifest.components:
        for line in comp.python_packages:
            requirement = Requirement(line)
            if canonicalize_name(requirement.name) != "torch-npu":
                continue
            pinned = [s.version for s in requirement.specifier if s.operator in ("==", "===")]
            known = f"the catalog pairs CANN {version} with torch-npu {', '.join(paired) or 'none'}"
            if not pinned:
                report.warnings.append(f"component {comp.id}: torch-npu is not pinned: {known}")
                continue
            compared.append(f"torch-npu {pinned[0]} ({comp.id})")
            if (cann := pairs.get(pinned[0])) != version:
                with_what = f"it pairs with CANN {cann}" if cann else "the catalog does not list it"
                report.errors.append(
                    f"component {comp.id}: torch-npu {pinned[0]} with CANN {version}: {with_what}; {known} "
                    "(ascend-deployer version_match.json)"
                )
    return compared


def _release_for(chip: str) -> str:
    """The supported alternative for chip: the newest release the catalog has for it."""
    having = [version for version, release in catalog.releases().items() if chip in release.chips]
    if not having:
        return ""
    newest = max(having, key=version_key)
    return f"; for {chip}, start from a release that has it: `stackbuild new {newest} --chip {chip}`"


def _check_components(manifest: Manifest, report: Report) -> list[str]:
    """Public upstream components only where their own requirements hold (builder/manifest/upstream.py);
    the components compared."""
    version, chip = manifest.toolkit.version, manifest.toolkit.chip
    compared = []
    for comp in manifest.components:
        if (repository := _origin(comp)) is None or (known := upstream_of(repository)) is None:
            continue
        name, upstream = known
        compared.append(f"component {comp.id}")
        if upstream.supports(version, chip):
            continue
        if chip not in upstream.min_cann:
            supported = ", ".join(upstream.min_cann)
            report.errors.append(
                f"component {comp.id} ({name}) does not support chip {chip} (only {supported}: {upstream.source})"
            )
        else:
            oldest = upstream.min_cann[chip]
            needs = f"needs CANN >= {oldest} on {chip}, the stack has {version}"
            report.errors.append(f"component {comp.id} ({name}) {needs} ({upstream.source})")
    return compared


def _check_host(manifest: Manifest, release: catalog.Release, report: Report) -> None:
    host, version = manifest.host, manifest.toolkit.version
    if release.driver:
        report.checked.append(f"host driver {host.driver} against CANN {version}'s {release.driver}")
        if host.driver == "none":
            report.errors.append(f"host.driver is 'none' but CANN {version} needs NPU driver {release.driver}")
        elif version_key(host.driver) < version_key(release.driver):
            report.errors.append(f"host driver {host.driver} is older than CANN {version} needs ({release.driver})")
        elif version_key(host.driver) != version_key(release.driver):
            report.warnings.append(
                f"host driver {host.driver} is not the one CANN {version} is released with "
                f"({release.driver}); newer drivers are usually compatible"
            )
    if release.firmware and host.firmware:
        report.checked.append(f"host firmware {host.firmware} against CANN {version}'s {release.firmware}")
        if version_key(host.firmware) != version_key(release.firmware):
            report.warnings.append(f"host firmware {host.firmware} differs from the documented {release.firmware}")


def _check_platform(manifest: Manifest, report: Report) -> None:
    platform = manifest.platform
    if (platform.os, platform.os_version) not in OFFICIAL_OSES:
        report.warnings.append(
            f"{platform.os} {platform.os_version} is not an OS of the official CANN images "
            f"(ubuntu 22.04/24.04, openeuler 22.03/24.03)"
        )
    tilelang = any((upstream_of(_origin(c) or "") or ("",))[0] == "tilelang-ascend" for c in manifest.components)
    if tilelang and tuple(int(p) for p in platform.python.split(".")) < MIN_PYTHON:
        report.warnings.append(f"Python {platform.python} is older than tilelang-ascend's minimum 3.10")
    _check_distribution_python(manifest, report)


def _check_distribution_python(manifest: Manifest, report: Report) -> None:
    """platform.python_from says who provides python3: a known mismatch with the distribution's is an error."""
    platform = manifest.platform
    shipped = DISTRIBUTION_PYTHON.get((platform.os, platform.os_version))
    bootstrapped = not plugins.kind_of(plugins.BASES, manifest.base).prebuilt
    if platform.python_from == "base" and bootstrapped:
        report.errors.append(
            "python_from: base needs a base image that installs Python; a bootstrapped base has only the "
            "distribution's python3: say python_from: distribution"
        )
    if shipped is None or shipped == platform.python or platform.python_from == "base":
        return
    said = f"{platform.os} {platform.os_version} ships Python {shipped}, the stack says {platform.python}"
    fix = f'say python: "{shipped}"'
    if not bootstrapped:
        fix += ", or python_from: base if the base image installs its own (the base stage probes it)"
    report.errors.append(f"{said} (python_from: distribution): {fix}")


def _check_packages(manifest: Manifest, release: catalog.Release, report: Report) -> list[str]:
    """The manifest's packages with a sha256 against the catalog's entries; those compared."""
    toolkit = manifest.toolkit
    compared = []
    for kind in PACKAGE_ROLES:
        for arch, package in toolkit.packages.of(kind).items():
            entry = release.package(kind, arch, toolkit.chip)
            if entry is None:
                report.warnings.append(f"{kind} package for {arch} is not in the catalog of {toolkit.version}")
                continue
            if not package.sha256:
                continue
            compared.append(f"{kind} {arch}")
            if entry.filename != package.file or entry.sha256 != package.sha256:
                report.errors.append(
                    f"{kind} package for {arch} differs from the catalog: expected {entry.filename} "
                    f"sha256 {entry.sha256}, the manifest has {package.file} sha256 {package.sha256}"
                )
    return compared


def _origin(component: Component) -> str | None:
    """The repository a component's source names (None: a kind without one, a path)."""
    origin: str | None = plugins.kind_of(plugins.SOURCES, component.source).origin(component.source)
    return origin
