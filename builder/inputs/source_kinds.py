"""What a kind of component source is (the `SourceKind` Protocol) and the one place the kinds are
told apart: each kind is a module (`git_source`, `path_source`, or a plug-in's, found through
`builder.model.plugins`) that locks its manifest form, says how a pin relates to the manifest and
to its source upstream, places it into a stage's build context, describes it for labels,
provenance, the SBOM and `inspect`, and names what a bundle must carry of it. Everything else asks
`kind_of(form)` and never names a kind.

Adding a kind: one module with a `KIND` object meeting `SourceKind` (its manifest model keyed by
`tag`, its locked model with `kind: Literal[tag]`), named by an entry point of the group
`stackbuild.sources` in its distribution's metadata."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from pydantic import BaseModel

from builder.model import plugins

if TYPE_CHECKING:  # the kinds are loaded with the manifest model, by every command: kept light
    from builder.inputs.contexts import ContextItem
    from builder.inputs.site import SiteConfig
    from builder.store.cache import Cache


class Where(Protocol):
    """What locking or placing a source, or making a base, needs of its caller (a lock's Resolver,
    a build's Request)."""

    @property
    def manifest_dir(self) -> Path: ...
    @property
    def site(self) -> SiteConfig: ...
    @property
    def cache(self) -> Cache: ...


@dataclass(frozen=True)
class PinAtSource:
    """Where a pin stands at its source now: what its ref names there, and whether the pinned
    revision is still served (a branch that moved keeps its old commit unless force-pushed away)."""

    pinned: str
    now: str
    served: bool
    ref: str
    source: str  # the repository, redacted


@dataclass(frozen=True)
class Placed:
    """A source in a stage's context: its items, what it is and its content hash (the stage key's
    part), and how a working tree drifted from its pin (None: it did not)."""

    items: tuple[ContextItem, ...]
    what: str
    content: str
    drift: str | None = None


@dataclass(frozen=True)
class Described:
    """A pin as labels, provenance, the SBOM and `inspect` show it."""

    pin: str  # what is pinned, for build lines and Dockerfiles: `git <ref> <commit>`, `source tree <sha256>`
    reference: str  # where it is, for labels: `url@commit`, `tree <sha256>`
    version: str  # the revision: a commit, a tree hash
    fields: dict[str, Any]  # `inspect`'s entry
    properties: dict[str, str] = field(default_factory=dict)  # SBOM properties (stackbuild:NAME)
    vcs: str | None = None  # the repository URL (redacted), for the SBOM and provenance
    commit: str | None = None  # the git commit provenance records as a material


@dataclass(frozen=True)
class Carried:
    """A repository a bundle carries at a commit: its URL in the lock and where this site fetches it."""

    url: str
    fetch_url: str
    commit: str


class SourceKind(Protocol):
    tag: str  # the manifest's key that selects it, and the lock's `kind`
    hint: str  # how a manifest selects it, for "give exactly one of ..."
    spec: type[BaseModel]
    locked: type[BaseModel]
    upgrades: plugins.Upgrades  # its pin's lock migrations (a kind newer than a version has none of it)

    def lock(self, spec: Any, where: Where) -> Any:
        """The pin of a manifest entry, resolved at its source now."""

    def entry(self, form: Any) -> dict[str, object]:
        """The manifest fields a pin is made from, of a manifest entry or of its pin (the same keys)."""

    def upstream(self, locked: Any, where: Where) -> PinAtSource | None:
        """Where the pin stands at its source (None: a kind whose pins do not move upstream)."""

    def drift(self, old: Any, new: Any) -> str | None:
        """How a pin made now differs from the lock's (None: it does not)."""

    def place(self, locked: Any, spec: Any, where: Where) -> Placed:
        """The pin in a stage's build context, under src/."""

    def built_from(self, locked: Any, content: str) -> Any:
        """The pin as built when the context held content (a working tree built as it is)."""

    def describe(self, locked: Any) -> Described: ...

    def carried(self, locked: Any, site: SiteConfig) -> list[Carried]:
        """The repositories a bundle must carry for the pin (a path source carries none: it is in the checkout)."""

    def problem(self, spec: Any, manifest_dir: Path) -> tuple[str, str] | None:
        """(field, what is wrong) with a manifest entry before anything is fetched (None: nothing)."""

    def origin(self, spec: Any) -> str | None:
        """The repository a manifest entry names (a URL or site:NAME), if any."""


def kinds() -> dict[str, SourceKind]:
    return cast(dict[str, SourceKind], plugins.loaded(plugins.SOURCES))


def kind_of(form: BaseModel) -> SourceKind:
    """The kind of a manifest entry or of a pin."""
    return cast(SourceKind, plugins.kind_of(plugins.SOURCES, form))
