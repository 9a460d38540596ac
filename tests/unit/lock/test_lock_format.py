"""The lock format contract: versions, migrations from committed old samples, per-architecture
sections, and digests over canonical JSON pinned by golden values."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from builder import lock as lock_io
from builder import manifest
from builder.inputs import bootstrap
from builder.inputs.base_kinds import TarballRecipe
from builder.inputs.debs import BaseRef, Deb
from builder.inputs.generated_package import LockedGenerated
from builder.inputs.site import SiteConfig
from builder.inputs.source_kinds import Where
from builder.lock.check import manifest_drift, stale_system
from builder.lock.locked import LOCK_VERSION, ArchSection, Lock
from builder.lock.resolve import resolve
from builder.lock.resolver import Resolver
from builder.model.arch import Arch
from builder.model.canonical import canonical_json
from builder.model.errors import StackbuildError
from builder.model.say import Say
from builder.plan.prepare import Request, resolve_inputs
from builder.store.cache import Cache
from builder.store.http import HttpClient
from tests.conftest import ROOT
from tests.golden_plan import GOLDEN

V1_SAMPLE = ROOT / "tests" / "lock_samples" / "reference.v1.lock.json"
# sha256 over the golden lock's canonical JSON: changes only when the format or the golden stack does.
GOLDEN_LOCK_SHA256 = json.loads((GOLDEN / "golden.lock.json").read_text())["lock_sha256"]


def test_canonical_json_sorts_keys_without_whitespace() -> None:
    assert canonical_json({"b": 1, "a": [1, {"d": None, "c": "é"}]}) == '{"a":[1,{"c":"é","d":null}],"b":1}'.encode()


def test_golden_lock_digest_is_pinned() -> None:
    locked = lock_io.read(GOLDEN / "golden.lock.json")
    assert (
        locked.content_sha256()
        == GOLDEN_LOCK_SHA256
        == "0a4b2bcd928beb40eea051170d977dc13165b855b6240ca8b6c6dd41ef9fd6e4"
    )


def test_a_new_defaulted_field_changes_no_digest() -> None:
    class LockWithMore(Lock):
        future_field: str = "default"

    locked = lock_io.read(GOLDEN / "golden.lock.json")
    extended = LockWithMore.model_validate(locked.model_dump())
    assert extended.content_sha256() == locked.content_sha256()
    assert extended.model_copy(update={"future_field": "set"}).content_sha256() != locked.content_sha256()


def test_manifest_digest_ignores_defaults_the_user_did_not_write(tmp_path: Path) -> None:
    text = (GOLDEN / "golden.yaml").read_text()
    explicit = text.replace("{path: output/lib}]", "{path: output/lib, runtime: false}]")
    assert explicit != text
    (tmp_path / "golden.yaml").write_text(explicit)
    written = manifest.load(tmp_path / "golden.yaml")
    assert manifest.manifest_digest(written) == manifest.manifest_digest(manifest.load(GOLDEN / "golden.yaml"))


def test_v1_sample_migrates_keeping_every_pin() -> None:
    old = json.loads(V1_SAMPLE.read_text())
    assert old["lock_version"] == 1
    migrated = lock_io.read(V1_SAMPLE)
    assert migrated.lock_version == LOCK_VERSION == 2
    assert [c.id for c in migrated.components] == [c["id"] for c in old["components"]]
    for before, after in zip(old["components"], migrated.components, strict=True):
        assert getattr(after.source, "kind", None) == before["source"]["kind"]
        assert getattr(after.source, "tree_sha256", None) == before["source"]["tree_sha256"]
    for package in old["packages"]:
        section = migrated.architectures[Arch(package["arch"])]
        pinned = section.package(package["kind"])
        assert isinstance(pinned, LockedGenerated)
        assert (pinned.file, pinned.sha256, pinned.command) == (package["file"], package["sha256"], package["generate"])
    for flavor in bootstrap.FLAVORS:
        assert migrated.tarball(Arch.X86_64, flavor).sha256 == old["base"]["tarballs"]["x86_64"][flavor]["sha256"]
    assert migrated.architectures[Arch.AARCH64].base == {}


def test_v1_pins_of_each_kind_are_upgraded_by_their_kind(tmp_path: Path) -> None:
    """Lock version 1 wrote every field of every kind (unused ones null): each kind's own upgrade
    (`upgrades`, builder.model.plugins.upgraded) keeps its fields, here a git source and an image
    base, which the sample (path sources, a bootstrap base) does not have."""
    from builder.lock.migrate import _v1_digest

    old = json.loads(V1_SAMPLE.read_text())
    commit, image = "c" * 40, "debian@sha256:" + "1" * 64
    first = old["components"][0]["source"]
    first.update(kind="git", url="https://example.test/ascend-c.git", ref="main", commit=commit, path=None)
    first["tree_sha256"] = None
    old["base"].update(kind="image", image=image, suite=None, mirror=None, variant=None)
    old["lock_sha256"] = _v1_digest(old)
    (tmp_path / "x.lock.json").write_text(json.dumps(old))
    migrated = lock_io.read(tmp_path / "x.lock.json")
    source = migrated.components[0].source.model_dump(mode="json")
    assert {k: source[k] for k in ("kind", "url", "ref", "commit")} == {
        "kind": "git",
        "url": "https://example.test/ascend-c.git",
        "ref": "main",
        "commit": commit,
    }
    base = migrated.model_dump(mode="json")["base"]
    assert base == {"kind": "image", "image": image, "source_date_epoch": 1704067200}


def test_v1_lock_asks_for_a_relock_saying_why(tmp_path: Path) -> None:
    migrated = lock_io.read(V1_SAMPLE)
    loaded = manifest.load(ROOT / "stacks" / "reference.yaml")
    drift = manifest_drift(migrated, loaded, "stacks/reference.yaml")
    assert drift and "locked by an older stackbuild (lock_version 1)" in drift
    request = Request(loaded, ROOT / "stacks" / "reference.yaml", migrated, SiteConfig(), Cache(tmp_path), Arch.X86_64)
    with pytest.raises(StackbuildError, match=r"older than its manifest \(manifest: locked by an older stackbuild"):
        resolve_inputs(request, say=print)


def test_edited_v1_lock_is_refused_before_migrating(tmp_path: Path) -> None:
    edited = V1_SAMPLE.read_text().replace('"toolkit_version": "8.3.RC1"', '"toolkit_version": "8.2.RC1"')
    (tmp_path / "x.lock.json").write_text(edited)
    with pytest.raises(StackbuildError, match="lock_sha256 does not match its content"):
        lock_io.read(tmp_path / "x.lock.json")


def test_unknown_lock_version_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x.lock.json").write_text(json.dumps({"lock_version": 99}))
    with pytest.raises(StackbuildError, match=r"lock_version 99 is not one this stackbuild reads \(1..2\)"):
        lock_io.read(tmp_path / "x.lock.json")


@pytest.mark.parametrize("epoch", [-1, 253402300800, 10**30])
def test_a_source_date_no_image_date_can_name_is_refused(tmp_path: Path, epoch: int) -> None:
    """Found by the lockfile fuzzer: a resealed lock dated past year 9999 crashed render's labels."""
    lock = lock_io.read(GOLDEN / "golden.lock.json")
    # Resealed over the new date, as the fuzzer's attacker does: only the field's bound can refuse it.
    dated = lock.model_copy(update={"base": lock.base.model_copy(update={"source_date_epoch": epoch})})
    (tmp_path / "x.lock.json").write_text(
        json.dumps({**dated.model_dump(mode="json"), "lock_sha256": dated.content_sha256()})
    )
    with pytest.raises(StackbuildError, match="source_date_epoch"):
        lock_io.read(tmp_path / "x.lock.json")


def test_refreshing_one_architecture_keeps_the_others_pins(tmp_path: Path) -> None:
    made: list[str] = []

    def make_base(recipe: TarballRecipe, arch: Arch, flavor: str, where: Where, say: Say) -> bootstrap.BaseTarball:
        """Bootstraps nothing: each tarball is a new fixed value (numbered by architecture, flavor and
        how often it was made: a lock makes both flavors at once), and each request is counted."""
        name = f"{arch}/{flavor}"
        order = ["x86_64/devel", "x86_64/runtime", "aarch64/devel", "aarch64/runtime"]
        number = 4 * made.count(name) + order.index(name) + 1
        made.append(name)
        return bootstrap.BaseTarball(f"{number:064x}", {})

    cache = Cache(tmp_path)
    resolved_on: list[str] = []

    def resolve_debs(base: BaseRef, sources: object, scopes: list[tuple[str, list[str]]], arch: Arch, *_: object):  # type: ignore[no-untyped-def]
        """Resolves nothing: one cached .deb per requested package, named after the tarball it is resolved on."""
        assert base.tarball is not None
        tarball = base.tarball
        resolved_on.append(f"{arch}/{tarball.name[-4:]}")
        deb = tmp_path / f"{tarball.name[-4:]}.deb"
        deb.write_text(tarball.name)
        sha = cache.add_file(deb)
        return {
            scope: [
                Deb(p, tarball.name[-4:], arch.debian, "http://deb.test/debian", f"pool/{p}_1_all.deb", sha, 1)
                for p in packages
            ]
            for scope, packages in scopes
        }

    # The reference stack with a component's own system packages (its components have none).
    edited = tmp_path / "stacks"
    shutil.copytree(ROOT / "stacks", edited, ignore=shutil.ignore_patterns("build", "__pycache__"))
    kernels = "    depends_on: [tilelang-compiler]\n"
    text = (edited / "reference.yaml").read_text()
    assert text.count(kernels) == 1
    (edited / "reference.yaml").write_text(text.replace(kernels, kernels + "    system_packages: [makeself]\n"))
    loaded = manifest.load(edited / "reference.yaml")
    resolver = Resolver(ROOT / "stacks", SiteConfig(), cache, HttpClient(), lambda _: None, make_base, resolve_debs)
    both = resolve(loaded, resolver, [Arch.X86_64, Arch.AARCH64])
    # Each architecture's devel scopes on its devel base, its runtime scope on its runtime base.
    assert resolved_on == ["x86_64/0001", "x86_64/0002", "aarch64/0003", "aarch64/0004"]
    assert sorted(made[:2]) == ["x86_64/devel", "x86_64/runtime"]
    assert sorted(made[2:]) == ["aarch64/devel", "aarch64/runtime"]
    again = resolve(loaded, resolver, [Arch.X86_64], previous=both)
    assert sorted(made[4:]) == ["x86_64/devel", "x86_64/runtime"]
    assert again.architectures[Arch.AARCH64].base == both.architectures[Arch.AARCH64].base
    # The system packages too: the refreshed architecture's resolved again on its new base, the other kept.
    assert resolved_on[4:] == ["x86_64/0005", "x86_64/0006"]
    assert again.architectures[Arch.AARCH64].system == both.architectures[Arch.AARCH64].system
    assert [d.version for d in again.architectures[Arch.X86_64].system.components["ascend-kernel"]] == ["0005"]
    assert again.architectures[Arch.X86_64].base != both.architectures[Arch.X86_64].base
    assert set(again.architectures) == {Arch.X86_64, Arch.AARCH64}
    assert all(isinstance(s, ArchSection) and s.packages for s in again.architectures.values())
    assert again.architectures[Arch.AARCH64].python == both.architectures[Arch.AARCH64].python
    assert again.architectures[Arch.AARCH64].python_keys == both.architectures[Arch.AARCH64].python_keys

    # New system packages, only x86_64 relocked: aarch64's section no longer says what the manifest
    # asks for, so a build of it refuses and lock --check names it (instead of installing nothing).
    text = (
        (edited / "reference.yaml")
        .read_text()
        .replace("system_packages: [makeself]", "system_packages: [makeself, git]")
    )
    (edited / "reference.yaml").write_text(text)
    changed = manifest.load(edited / "reference.yaml")
    third = resolve(changed, resolver, [Arch.X86_64], previous=again)
    assert stale_system(changed, Arch.X86_64, third.architectures[Arch.X86_64]) is None
    assert stale_system(changed, Arch.AARCH64, third.architectures[Arch.AARCH64]) == (
        "has no system packages resolved for aarch64 from this manifest"
    )
    assert stale_system(loaded, Arch.AARCH64, again.architectures[Arch.AARCH64]) is None
