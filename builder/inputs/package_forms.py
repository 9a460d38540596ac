"""The forms a toolkit package file is shipped in, told apart here only, by the file name's suffix:
a signed catalog zip (`<name>.zip`, `builder.inputs.signed`: its installer is the `.run` inside,
unwrapped and verified as ascend-deployer does it) or a bare installer (`<name>.run`, run as it
is). Each form says which installer a package file gives the toolkit stage and how it is had from
the file. Forms are found as kinds are (`builder.model.plugins`, the group
`stackbuild.package_forms`, each named by its suffix), so a plug-in may add one.

A registry of its own rather than a hook of the package kind: the form does not follow from how a
package is obtained (the reference stack generates signed zips, 8.5.0 downloads them, 6.3.RC1
downloads bare `.run`s), so as a hook every kind would tell the forms apart again."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from builder.model import plugins

if TYPE_CHECKING:
    from builder.inputs.signed import Trust
    from builder.store.cache import Cache


class PackageForm(Protocol):
    tag: str  # the suffix (after the dot) of the file names shipped in this form

    def installer_name(self, file: str) -> str:
        """The installer a package file of this form gives: its name in the toolkit stage's context."""

    def installer(self, path: Path, file: str, trust: Trust, cache: Cache, fix: str, sha256: str | None) -> Path:
        """The installer the package file at path (named file in the manifest) gives, verified to be what
        its name says, or refused in one line (fix: what to do about it). sha256: the file's, when known."""


class BareInstaller:
    """A `.run` as the official images download it: no signature to check, the sha256 pin is the check.
    A file whose suffix no form claims is taken as one, as stackbuild always has."""

    tag = "run"

    def installer_name(self, file: str) -> str:
        return file

    def installer(self, path: Path, file: str, trust: Trust, cache: Cache, fix: str, sha256: str | None) -> Path:
        return path


BARE = BareInstaller()


def forms() -> dict[str, PackageForm]:
    return cast(dict[str, PackageForm], plugins.loaded(plugins.FORMS))


def form_of(file: str) -> PackageForm:
    """The form a package file is shipped in, by its name's suffix."""
    return next((form for form in forms().values() if file.endswith(f".{form.tag}")), BARE)


def installer_name(file: str) -> str:
    """The file the toolkit stage runs for a package file (a signed catalog zip's .run, or the .run itself)."""
    return form_of(file).installer_name(file)


def installer(path: Path, file: str, trust: Trust, cache: Cache, fix: str, sha256: str | None = None) -> Path:
    """The installer a package file gives, by its form (see PackageForm.installer)."""
    return form_of(file).installer(path, file, trust, cache, fix, sha256)
