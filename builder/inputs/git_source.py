"""The git kind of component source: a repository at a branch, tag or commit, with its submodules
(but those the manifest skips) resolved recursively and pinned, placed into a stage's context as
the trees at their commits (or a shallow checkout, `keep_git`)."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, ValidationError

from builder.inputs.source_kinds import Carried, Described, PinAtSource, Placed, Where
from builder.manifest.basemodel import Frozen, Model
from builder.manifest.types import COMMIT_PATTERN, GitRef, GitUrl, RelativePath
from builder.model.canonical import digest
from builder.model.plugins import Upgrades

if TYPE_CHECKING:
    from builder.inputs import submodules
    from builder.inputs.contexts import GitTree
    from builder.inputs.site import SiteConfig

# A kind is loaded with the manifest model, by every command: what locking, placing and describing
# need (git, the network layer) is imported where they run.


class GitSource(Model):
    TAG: ClassVar[str] = "git"
    git: GitUrl = Field(description="repository URL, or site:NAME for the site config's repos")
    ref: GitRef = Field(description="branch, tag or commit of the git source")
    keep_git: bool = Field(
        default=False,
        description="the build context holds a git checkout (.git, shallow, at the pinned commit, with its tags and "
        "submodules) for build scripts that call git; otherwise only the files",
    )
    skip_submodules: list[RelativePath] = Field(
        default_factory=list,
        description="submodules (paths from the repository root, nested ones too: a/b/c) left out of the lock and "
        "the checkout, and marked update=none so `git submodule update` leaves them alone: for parts a build does "
        "not use whose commits cannot be had",
    )

    @property
    def url(self) -> str:
        """The repository, under the name its pin gives it."""
        return self.git


class LockedSubmodule(Frozen):
    path: RelativePath
    url: GitUrl
    commit: str = Field(pattern=COMMIT_PATTERN)
    submodules: list[LockedSubmodule] = Field(default_factory=list)


class LockedGit(Frozen):
    kind: Literal["git"] = "git"
    url: GitUrl
    ref: GitRef
    commit: str = Field(pattern=COMMIT_PATTERN)
    # Resolved recursively at lock time; the build context holds each one's tree at its commit.
    submodules: list[LockedSubmodule] = Field(default_factory=list)
    # Left out (the manifest's skip_submodules): neither resolved nor checked out.
    skip_submodules: list[RelativePath] = Field(default_factory=list)


def _from_v1(pin: dict[str, Any]) -> dict[str, Any]:
    """Lock version 1 wrote every field of every kind, unused ones null."""
    return {"kind": "git", "url": pin["url"], "ref": pin["ref"], "commit": pin["commit"]}


class GitKind:
    tag = "git"
    hint = "'git' (with 'ref')"
    spec = GitSource
    locked = LockedGit
    upgrades: Upgrades = MappingProxyType({1: _from_v1})

    def lock(self, spec: GitSource, where: Where) -> LockedGit:
        from builder.inputs import git, submodules
        from builder.store.http import redact

        fetch_url = where.site.repo_url(spec.git)
        commit = git.resolve_ref(fetch_url, spec.ref)
        found = submodules.resolve(spec.git, fetch_url, commit, where.cache, where.site, spec.skip_submodules)
        try:
            return LockedGit(
                url=spec.git,
                ref=spec.ref,
                commit=commit,
                submodules=[_locked(s) for s in found],
                skip_submodules=spec.skip_submodules,
            )
        except ValidationError as err:  # a .gitmodules entry: said without echoing it (it may hold a token)
            problem = err.errors()[0]
            at = ".".join(str(p) for p in problem["loc"])
            message = problem["msg"].removeprefix("Value error, ")
            raise git.SourceError(f"{redact(spec.git)} at {commit}: submodule {at}: {message}") from None

    def entry(self, form: GitSource | LockedGit) -> dict[str, object]:
        return {"url": form.url, "ref": form.ref, "skip_submodules": form.skip_submodules}

    def upstream(self, locked: LockedGit, where: Where) -> PinAtSource:
        from builder.inputs import git
        from builder.store.http import redact

        fetch_url = where.site.repo_url(locked.url)
        now = git.resolve_ref(fetch_url, locked.ref)
        served = now == locked.commit or git.fetchable(fetch_url, locked.commit, where.cache)
        return PinAtSource(locked.commit, now, served, locked.ref, redact(locked.url))

    def drift(self, old: LockedGit, new: LockedGit) -> str | None:
        if old.commit != new.commit:
            return f"{new.ref} moved {old.commit} -> {new.commit}"
        if old.submodules != new.submodules:
            found = f"({len(old.submodules)} locked, {len(new.submodules)} in the repository)"
            return f"submodules differ from the repository's {found}"
        return None

    def place(self, locked: LockedGit, spec: GitSource, where: Where) -> Placed:
        from builder.inputs.contexts import GitTree

        site = where.site
        subs = _submodule_trees(site, "src/", locked.submodules)
        tree = GitTree(
            "src/", site.repo_url(locked.url), locked.commit, subs, spec.keep_git, site.skipped_checks(locked.url)
        )
        content = locked.commit
        if locked.submodules or spec.keep_git:
            subs_pinned = [s.model_dump() for s in locked.submodules]
            content = digest({"commit": locked.commit, "submodules": subs_pinned, "git": spec.keep_git})
        return Placed((tree,), f"git {locked.ref}", content)

    def built_from(self, locked: LockedGit, content: str) -> LockedGit:
        return locked  # a commit is built as it is

    def describe(self, locked: LockedGit) -> Described:
        from builder.store.http import redact

        url = redact(locked.url)
        fields: dict[str, object] = {"repository": url, "ref": locked.ref, "commit": locked.commit}
        if locked.submodules:
            fields["submodules"] = {s.path: s.commit for s in locked.submodules}
        return Described(
            pin=f"git {locked.ref} {locked.commit}",
            reference=f"{url}@{locked.commit}",
            version=locked.commit,
            fields=fields,
            properties={"stackbuild:git-ref": locked.ref},
            vcs=url,
            commit=locked.commit,
        )

    def carried(self, locked: LockedGit, site: SiteConfig) -> list[Carried]:
        def subs(found: list[LockedSubmodule]) -> list[Carried]:
            return [c for s in found for c in [Carried(s.url, site.rewrite(s.url), s.commit), *subs(s.submodules)]]

        return [Carried(locked.url, site.repo_url(locked.url), locked.commit), *subs(locked.submodules)]

    def problem(self, spec: GitSource, manifest_dir: Path) -> tuple[str, str] | None:
        return None  # a repository is checked when it is locked

    def origin(self, spec: GitSource) -> str:
        return spec.git


def _locked(found: submodules.Submodule) -> LockedSubmodule:
    return LockedSubmodule(
        path=found.path, url=found.url, commit=found.commit, submodules=[_locked(s) for s in found.submodules]
    )


def _submodule_trees(site: SiteConfig, prefix: str, subs: list[LockedSubmodule]) -> tuple[GitTree, ...]:
    from builder.inputs.contexts import GitTree

    return tuple(
        GitTree(
            f"{prefix}{s.path}/",
            site.rewrite(s.url),
            s.commit,
            _submodule_trees(site, f"{prefix}{s.path}/", s.submodules),
            skipped_checks=site.skipped_checks(s.url),
        )
        for s in subs
    )


KIND = GitKind()
