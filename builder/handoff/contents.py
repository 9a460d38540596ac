"""What a final image holds, read from its labels and the lock it carries (`LOCK_IN_IMAGE`): what
`stackbuild inspect` shows and `stackbuild diff` compares, without reading a Dockerfile."""

from __future__ import annotations

import datetime
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from builder.engine import Engine
from builder.inputs import base_kinds
from builder.inputs.bootstrap import Flavor
from builder.inputs.source_kinds import kind_of
from builder.lock import io as lock_io
from builder.lock.locked import Lock
from builder.manifest.model import RunUser, Smoke
from builder.model.arch import ARCHITECTURES, Arch
from builder.model.errors import StackbuildError
from builder.plan.labels import (
    COMPONENT_LABEL,
    LOCK_IN_IMAGE,
    SMOKE_COMMAND,
    SMOKE_EXPECT,
    SMOKE_NEEDS_DEVICE,
    USER_GID,
    USER_NAME,
    USER_UID,
)

ARCH_LABEL = "org.stackbuild.arch"
PLAIN_WORD = re.compile(r"[\w./,:=+@%-]+")


@dataclass(frozen=True)
class Contents:
    image: str
    labels: Mapping[str, str]
    lock: Lock
    arch: Arch

    @property
    def devel(self) -> bool:
        # The title, which every stackbuild release has written the same way (the tags' suffixes moved).
        return self.labels.get("org.opencontainers.image.title", "").endswith(" devel image")

    @property
    def flavor(self) -> Flavor:
        return "devel" if self.devel else "runtime"

    def component_ids(self) -> list[str]:
        """The components the image holds, in build order: those it has a label for (images from before
        the labels named only what they hold, which carry no smoke label, labelled every component)."""
        held = [cid for cid in self.lock.order if f"{COMPONENT_LABEL}{cid}" in self.labels]
        return held if SMOKE_COMMAND in self.labels else held or list(self.lock.order)

    def smoke(self) -> Smoke | None:
        """The smoke command the image carries (None: built before images carried it)."""
        if (command := self.labels.get(SMOKE_COMMAND)) is None:
            return None
        return Smoke(
            command=command,
            expect=self.labels.get(SMOKE_EXPECT, ""),
            needs_device=self.labels.get(SMOKE_NEEDS_DEVICE) == "true",
        )

    def run_user(self) -> RunUser | None:
        """The user the image runs as (None: root, or built before images named theirs)."""
        if (name := self.labels.get(USER_NAME)) is None:
            return None
        uid, gid = self.labels.get(USER_UID, ""), self.labels.get(USER_GID, "")
        try:
            return RunUser(name=name, uid=int(uid), gid=int(gid))
        except ValueError as err:  # pydantic's ValidationError is one
            raise StackbuildError(f"{self.image}: its user labels are not a user ({name!r} {uid!r}:{gid!r})") from err

    def components(self) -> dict[str, dict[str, Any]]:
        """Each component's source: repository and commit, or the tree hash of a path source."""
        found: dict[str, dict[str, Any]] = {}
        for component in map(self.lock.component, self.component_ids()):
            entry: dict[str, Any] = dict(kind_of(component.source).describe(component.source).fields)
            if component.network:
                entry["network"] = True  # what it downloaded while building is not pinned
            found[component.id] = entry
        return found

    def packages(self) -> dict[str, dict[str, str]]:
        """The toolkit's installer packages by role: file and sha256."""
        section = self.lock.architectures.get(self.arch)
        return {p.role: {"file": p.file, "sha256": p.sha256} for p in (section.packages if section else [])}

    def system_packages(self) -> dict[str, str]:
        """Debian package -> version: the base tarball's and the pinned .debs installed into this variant."""
        section = self.lock.architectures.get(self.arch)
        if section is None:
            return {}
        found = dict(tarball.packages) if (tarball := section.base.get(self.flavor)) else {}
        debs = [*section.system.stack, *section.system.devel()] if self.devel else section.system.runtime
        found.update({deb.name: deb.version for deb in debs})
        return dict(sorted(found.items()))

    def python_packages(self) -> dict[str, str]:
        section = self.lock.architectures.get(self.arch)
        held = self.component_ids()
        wheels = [w for cid, pinned in (section.python.items() if section else []) if cid in held for w in pinned]
        return dict(sorted((w.name, w.version) for w in wheels))

    def base(self) -> dict[str, Any]:
        base = self.lock.base
        found: dict[str, Any] = dict(base_kinds.kind_of(base).fields(base))
        found["source_date_epoch"] = base.source_date_epoch
        section = self.lock.architectures.get(self.arch)
        if section and (tarball := section.base.get(self.flavor)):
            found["tarball_sha256"] = tarball.sha256
        return found

    def describe(self) -> dict[str, Any]:
        """Everything `inspect --json` prints."""
        labels = self.labels
        return {
            "image": self.image,
            "stack": self.lock.stack,
            "release": labels.get("org.opencontainers.image.version"),
            "variant": self.flavor,
            "arch": self.arch.value,
            "lock_sha256": self.lock.lock_sha256,
            "toolkit": {**self.lock.toolkit.model_dump(mode="json"), "packages": self.packages()},
            "certified_host": {
                "driver": labels.get("org.stackbuild.host.driver"),
                "firmware": labels.get("org.stackbuild.host.firmware"),
            },
            "base": self.base(),
            "components": self.components(),
            "system_packages": self.system_packages(),
            "python_packages": self.python_packages(),
        }


def read_contents(engine: Engine, image: str, arch: Arch) -> Contents:
    """The image's labels and carried lock; arch picks the variant to pull when the image is not here."""
    where = f"{image}:{LOCK_IN_IMAGE}"
    text = engine.files(image, [LOCK_IN_IMAGE], arch).get(LOCK_IN_IMAGE)
    if text is None:
        raise StackbuildError(
            f"{image} carries no {LOCK_IN_IMAGE}: only the final images stackbuild builds (tags printed by "
            "`stackbuild build` or `publish`) can be inspected"
        )
    try:
        lock = lock_io.parse(text.decode(), where)
    except UnicodeDecodeError as err:
        raise StackbuildError(f"{where}: not a lockfile ({err})") from err
    labels = dict(engine.inspect(image).labels)
    label = labels.get(ARCH_LABEL, "")
    return Contents(image, labels, lock, Arch(label) if label in ARCHITECTURES else arch)


def summary(contents: Contents) -> list[str]:
    """`inspect` for people, in 100 columns: one line per fact, components and packages indented below."""
    about = contents.describe()
    toolkit, host, base = about["toolkit"], about["certified_host"], about["base"]
    lines = [
        f"image         {contents.image}",
        f"stack         {about['stack']}  {about['release'] or ''} ({about['variant']}, {about['arch']})",
        f"lock          sha256:{about['lock_sha256']}",
        f"toolkit       {toolkit['vendor']} CANN {toolkit['version']} for {toolkit['chip']}",
        *(f"  {role:<11} {p['file']}  sha256:{p['sha256'][:12]}" for role, p in toolkit["packages"].items()),
        f"certified for driver {host['driver'] or '?'}, firmware {host['firmware'] or 'any'} (on the host)",
        f"base          {base.get('bootstrap') or base.get('image')}",
        f"  dated       {datetime.datetime.fromtimestamp(base['source_date_epoch'], datetime.timezone.utc):%Y-%m-%d}"
        + (f"  tarball sha256:{base['tarball_sha256'][:12]}" if "tarball_sha256" in base else ""),
        "components",
    ]
    for cid, source in about["components"].items():
        where = (
            f"{source['repository']} {source['ref']} @ {source['commit'][:12]}"
            if "commit" in source
            else f"path {source['path']} tree {source['tree_sha256'][:12]}"
        )
        lines.append(
            f"  {cid:<20} {where}{'  (downloads while building: not pinned)' if source.get('network') else ''}"
        )
    lines.append(f"system packages  {len(about['system_packages'])} (dpkg names and versions: --json)")
    # The lock's wheels for what the image holds; the SBOM lists what pip finds in it (the components' own too).
    lines.append(
        f"python packages  {len(about['python_packages'])} pinned by the lock (`stackbuild sbom` lists all pip sees)"
    )
    lines += [f"  {name}=={version}" for name, version in about["python_packages"].items()]
    return lines


def handing_over(contents: Contents) -> list[str]:
    """How to run the image on an NPU host, for whoever was given its tag: no checkout needed."""
    smoke = contents.smoke()
    if smoke is None:
        return [
            f"to run it     stackbuild run {contents.image} (its smoke command: stackbuild smoke IMAGE --stack STACK)"
        ]
    return [
        "to run it     on a host with the NPU driver (`stackbuild doctor` says what the host lacks):",
        f"  stackbuild smoke {contents.image}",
        *run_lines(contents.image, smoke.command.strip()),
    ]


def run_lines(image: str, script: str, width: int = 100) -> list[str]:
    """`stackbuild run IMAGE -- bash -c 'SCRIPT'`, in lines of at most width where it can be: a one-line
    script is broken between words with backslash-newlines, which the shell and bash -c both join."""
    one = f"  stackbuild run {image} -- bash -c {shlex.quote(script)}"
    # Only a script of plain words separated by single spaces is broken: one with quotes, comments or
    # spacing of its own would mean something else once its lines are joined.
    if len(one) <= width or not all(PLAIN_WORD.fullmatch(word) for word in script.split(" ")):
        return [one]
    lines, line = [f"  stackbuild run {image} \\"], "    -- bash -c '"
    for word in script.split():
        if len(line) + 1 + len(word) + 2 > width and not line.endswith("'"):
            lines.append(f"{line} \\")
            line = "      "
        line += word if line.endswith(("'", " ")) else f" {word}"
    return [*lines, f"{line}'"]
