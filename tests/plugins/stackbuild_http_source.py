"""A kind of component source that stackbuild does not have, for the tests that add one: a tarball
over HTTP, pinned by its sha256 and placed in the stage's context as src/source.tar (the component's
build unpacks it). One module meeting builder.inputs.source_kinds.SourceKind, found as any plug-in is:
through an entry point of the group `stackbuild.sources` (tests/unit/inputs/test_source_plugins.py writes
the distribution metadata that names it)."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import ClassVar, Literal

from pydantic import Field

from builder.inputs.contexts import FileItem
from builder.inputs.site import SiteConfig
from builder.inputs.source_kinds import Carried, Described, Placed, Where
from builder.manifest.basemodel import Frozen, Model
from builder.manifest.types import SHA256_PATTERN, DownloadUrl
from builder.model.plugins import Upgrades
from builder.store.http import HttpClient, SizeLimit

ARCNAME = "src/source.tar"


class HttpSource(Model):
    TAG: ClassVar[str] = "http"
    http: DownloadUrl = Field(description="a tarball's URL (site URL rewrites apply)")
    sha256: str | None = Field(default=None, pattern=SHA256_PATTERN, description="its sha256, if known")

    @property
    def url(self) -> str:
        return self.http


class LockedHttp(Frozen):
    kind: Literal["http"] = "http"
    url: DownloadUrl
    sha256: str = Field(pattern=SHA256_PATTERN)


def _fetched(url: str, sha256: str | None, where: Where) -> str:
    limit = SizeLimit.of(None, int(where.site.download_limit))
    return HttpClient().download(where.site.rewrite(url), where.cache, sha256, limit=limit)


class HttpKind:
    tag = "http"
    hint = "'http'"
    spec = HttpSource
    locked = LockedHttp
    upgrades: Upgrades = MappingProxyType({})  # new since lock version 2: nothing to upgrade

    def lock(self, spec: HttpSource, where: Where) -> LockedHttp:
        return LockedHttp(url=spec.http, sha256=_fetched(spec.http, spec.sha256, where))

    def entry(self, form: HttpSource | LockedHttp) -> dict[str, object]:
        return {"url": form.url}

    def upstream(self, locked: LockedHttp, where: Where) -> None:
        return None  # fetched again on every lock

    def drift(self, old: LockedHttp, new: LockedHttp) -> str | None:
        return f"{new.url} now serves {new.sha256}, not {old.sha256}" if old.sha256 != new.sha256 else None

    def place(self, locked: LockedHttp, spec: HttpSource, where: Where) -> Placed:
        def obtain() -> Path:
            return where.cache.blob(_fetched(locked.url, locked.sha256, where))

        return Placed((FileItem(ARCNAME, obtain),), "http tarball", locked.sha256)

    def built_from(self, locked: LockedHttp, content: str) -> LockedHttp:
        return locked

    def describe(self, locked: LockedHttp) -> Described:
        return Described(
            pin=f"http {locked.url} {locked.sha256}",
            reference=f"{locked.url}#sha256={locked.sha256}",
            version=locked.sha256,
            fields={"url": locked.url, "sha256": locked.sha256},
            properties={"stackbuild:url": locked.url},
        )

    def carried(self, locked: LockedHttp, site: SiteConfig) -> list[Carried]:
        return []  # the tarball is a file of the stage's context: a bundle carries it as one

    def problem(self, spec: HttpSource, manifest_dir: Path) -> tuple[str, str] | None:
        return None

    def origin(self, spec: HttpSource) -> str | None:
        return None


KIND = HttpKind()
