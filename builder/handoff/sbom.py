"""`stackbuild sbom IMAGE`: a CycloneDX JSON SBOM of a final image, made with cyclonedx-python-lib:
the stack's components with their repositories and commits (or tree hashes) and the toolkit's
packages with their sha256, from the lock the image carries; every Debian and Python package with
its version, asked of the image itself (dpkg-query, and Python's own distribution metadata over the
image's sys.path, as pip list reads it). The same image gives the same SBOM: its serial number and
date follow from the image and the lock, not from the clock, so `publish` attaches the same SBOM to
an image wherever it is published from (execute.attestation)."""

from __future__ import annotations

import datetime
import re
import uuid

from cyclonedx.model import ExternalReference, ExternalReferenceType, HashAlgorithm, HashType, Property, XsUri
from cyclonedx.model.bom import Bom
from cyclonedx.model.component import Component, ComponentType
from cyclonedx.output.json import JsonV1Dot6
from cyclonedx.schema import SchemaVersion
from packageurl import PackageURL

from builder import __version__
from builder.engine import Engine
from builder.handoff.contents import Contents, read_contents
from builder.inputs.source_kinds import kind_of
from builder.model.arch import Arch
from builder.model.errors import StackbuildError

# Installed packages only: a package removed but not purged is still listed, with another status.
DEBIAN_QUERY = ["dpkg-query", "-W", "-f", "${db:Status-Abbrev}\\t${Package}\\t${Version}\\t${Architecture}\\n"]
# pip list's view: every distribution on sys.path (PYTHONPATH included), the first of a name winning.
PYTHON_QUERY = [
    "python3",
    "-c",
    "import importlib.metadata as m, re\n"
    "seen = {}\n"
    "for d in m.distributions():\n"
    "    name = d.metadata['Name']\n"
    "    if name: seen.setdefault(re.sub(r'[-_.]+', '-', name).lower(), (name, d.version))\n"
    "for name, version in sorted(seen.values()): print(f'{name}\\t{version}')\n",
]


def canonical(name: str) -> str:
    """A Python project name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _rows(engine: Engine, image: str, command: list[str], what: str) -> list[list[str]]:
    ran = engine.run(image, command, timeout=300)
    if ran.exit_code != 0:
        raise StackbuildError(f"cannot list the {what} of {image}: {ran.output.strip()[-300:]}")
    return [line.split("\t") for line in ran.output.splitlines() if line.count("\t") >= 1]


def debian_packages(engine: Engine, image: str) -> dict[str, tuple[str, str]]:
    """Installed Debian packages: name -> (version, architecture)."""
    if engine.run(image, ["sh", "-c", "command -v dpkg-query"], timeout=60).exit_code != 0:
        raise StackbuildError(f"{image} has no dpkg-query: SBOMs of rpm-based images (openEuler) are not made yet")
    rows = _rows(engine, image, DEBIAN_QUERY, "Debian packages")
    return {row[1]: (row[2], row[3]) for row in rows if len(row) == 4 and row[0].strip() == "ii"}


def python_packages(engine: Engine, image: str) -> dict[str, str]:
    """Python distributions the image's python3 sees: name -> version ({} without python3)."""
    if engine.run(image, ["sh", "-c", "command -v python3"], timeout=60).exit_code != 0:
        return {}
    return {row[0]: row[1] for row in _rows(engine, image, PYTHON_QUERY, "Python packages")}


def os_id(engine: Engine, image: str) -> str:
    """The image's distribution as /etc/os-release names it (debian, ubuntu, openeuler): purls say it."""
    ran = engine.run(image, ["sh", "-c", '. /etc/os-release && echo "$ID"'], timeout=60)
    return ran.output.strip().lower() if ran.exit_code == 0 and ran.output.strip() else "debian"


def _stack_component(contents: Contents, component_id: str) -> Component:
    source = contents.lock.component(component_id).source
    about = kind_of(source).describe(source)
    properties = [Property(name="stackbuild:component", value=component_id)]
    properties += [Property(name=name, value=value) for name, value in about.properties.items()]
    vcs = [ExternalReference(type=ExternalReferenceType.VCS, url=XsUri(about.vcs))] if about.vcs else []
    return Component(
        type=ComponentType.LIBRARY,
        name=component_id,
        version=about.version,
        bom_ref=f"component:{component_id}",
        external_references=vcs,
        properties=properties,
    )


def _toolkit_packages(contents: Contents) -> list[Component]:
    return [
        Component(
            type=ComponentType.FILE,
            group="cann",
            name=package["file"],
            version=contents.lock.toolkit.version,
            bom_ref=f"toolkit:{role}",
            hashes=[HashType(alg=HashAlgorithm.SHA_256, content=package["sha256"])],
            properties=[Property(name="stackbuild:toolkit-role", value=role)],
        )
        for role, package in contents.packages().items()
    ]


def _package(name: str, version: str, purl: PackageURL) -> Component:
    return Component(type=ComponentType.LIBRARY, name=name, version=version, purl=purl, bom_ref=str(purl))


def make_sbom(
    contents: Contents, image_id: str, debs: dict[str, tuple[str, str]], python: dict[str, str], os_name: str
) -> str:
    """The SBOM as CycloneDX 1.6 JSON, checked against the schema."""
    lock = contents.lock
    bom = Bom(serial_number=uuid.uuid5(uuid.NAMESPACE_URL, f"stackbuild:{image_id}"))
    bom.metadata.timestamp = datetime.datetime.fromtimestamp(lock.base.source_date_epoch, datetime.timezone.utc)
    bom.metadata.tools.components.add(Component(type=ComponentType.APPLICATION, name="stackbuild", version=__version__))
    bom.metadata.component = Component(
        type=ComponentType.CONTAINER,
        name=f"{lock.stack} {contents.flavor} image",
        version=contents.labels.get("org.opencontainers.image.version") or lock.lock_sha256,
        bom_ref="image",
        hashes=[HashType(alg=HashAlgorithm.SHA_256, content=image_id.removeprefix("sha256:"))],
        properties=[
            Property(name="stackbuild:lock-sha256", value=lock.lock_sha256),
            Property(name="stackbuild:arch", value=contents.arch.value),
        ],
    )
    for component_id in contents.component_ids():
        bom.components.add(_stack_component(contents, component_id))
    for package in _toolkit_packages(contents):
        bom.components.add(package)
    for name, (version, arch) in debs.items():
        bom.components.add(
            _package(
                name, version, PackageURL("deb", os_name, name, version, qualifiers={"arch": arch} if arch else None)
            )
        )
    for name, version in python.items():
        bom.components.add(_package(name, version, PackageURL(type="pypi", name=canonical(name), version=version)))
    bom.register_dependency(bom.metadata.component, list(bom.components))  # the image holds each of them
    return validated(JsonV1Dot6(bom).output_as_string(indent=2), f"the SBOM of {contents.image}")


def validated(text: str, what: str) -> str:
    """text, a CycloneDX 1.6 JSON document; StackbuildError naming what when the schema refuses it."""
    # Imported here: the validator's schema machinery takes seconds to import, and only an SBOM needs it.
    from cyclonedx.validation.json import JsonStrictValidator

    if (errors := JsonStrictValidator(SchemaVersion.V1_6).validate_str(text)) is not None:
        raise StackbuildError(f"{what} does not validate against CycloneDX 1.6: {errors}")
    return text


def image_sbom(engine: Engine, image: str, arch: Arch) -> str:
    """The SBOM of a final image, read from the image itself (pulled for arch when it is not here)."""
    return make_sbom(
        read_contents(engine, image, arch),
        engine.image_id(image) or "",
        debian_packages(engine, image),
        python_packages(engine, image),
        os_id(engine, image),
    )
