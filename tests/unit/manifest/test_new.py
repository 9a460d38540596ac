import importlib.util
import json
from pathlib import Path

import pytest
import yaml

from builder import manifest
from builder.manifest.model import RunUser
from tests.conftest import ROOT
from tests.helpers import run_cli


def catalog_entries(version: str) -> dict[str, dict[str, str]]:
    """The ascend-deployer catalog file, read directly (not through builder.catalog)."""
    spec = importlib.util.find_spec("ascend_deployer")
    assert spec and spec.submodule_search_locations
    path = Path(next(iter(spec.submodule_search_locations))) / "downloader" / "software" / f"CANN_{version}.json"
    return {o["filename"]: o for o in json.loads(path.read_text())["other"]}


def test_new_8_3_rc1_matches_catalog_byte_for_byte(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "new.yaml"
    code, _, err = run_cli(capsys, "new", "8.3.RC1", "--chip", "910b", "-o", str(out))
    assert code == 0, err
    data = yaml.safe_load(out.read_text())
    entries = catalog_entries("8.3.RC1")
    written = [pkg for kind in data["toolkit"]["packages"].values() for pkg in kind.values()]
    assert {p["file"] for p in written} == {
        "Ascend-cann-toolkit_8.3.RC1_linux-x86_64.zip",
        "Ascend-cann-toolkit_8.3.RC1_linux-aarch64.zip",
        "Ascend-cann-kernels-910b_8.3.RC1_linux-x86_64.zip",
        "Ascend-cann-kernels-910b_8.3.RC1_linux-aarch64.zip",
    }
    for pkg in written:
        assert pkg["url"] == entries[pkg["file"]]["url"]
        assert pkg["sha256"] == entries[pkg["file"]]["sha256"]
    assert data["host"]["driver"] == "25.3.RC1"
    # What to do next, as the three commands that do it (a path outside stacks/ is named as a path).
    assert [line.split("#")[0].split("stackbuild ", 2)[-1].strip() for line in err.splitlines()[-3:]] == [
        f"check {out}",
        f"lock {out}",
        f"build {out}",
    ]
    loaded = manifest.load(out)
    assert loaded.toolkit.version == "8.3.RC1" and loaded.toolkit.vendor == "huawei"


def test_new_rejects_unknown_release_and_chip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "new", "7.0.0", "--chip", "910b", "-o", str(tmp_path / "a.yaml"))
    assert code == 2 and "CANN 7.0.0 has no package list in the catalog" in err  # bad input: no traceback log
    code, _, err = run_cli(capsys, "new", "8.1.RC1", "--chip", "a3", "-o", str(tmp_path / "b.yaml"))
    assert code == 2 and "no packages for chip a3" in err and "traceback" not in err
    assert not (tmp_path / "a.yaml").exists() and not (tmp_path / "b.yaml").exists()


# Which public upstream layers each catalog release and chip gets, written by hand from the
# projects' READMEs (tilelang-ascend: A2/A3 from 8.3.RC1; catlass: A2/A3 from 8.2.RC1), not from the
# table `new` reads. Never asc-devkit: the toolkit ships it (builder/manifest/templates/cann.yaml).
ALL = ["tilelang-ascend", "catlass"]
EXPECTED = {
    ("8.1.RC1", "910b"): [],
    ("8.1.RC1", "910"): [],
    ("8.1.RC1", "310p"): [],
    ("8.2.RC1", "910b"): ["catlass"],
    ("8.2.RC1", "910"): [],
    ("8.2.RC1", "310p"): [],
    ("8.3.RC1", "910b"): ["tilelang-ascend", "catlass"],
    ("8.3.RC1", "910"): [],
    ("8.3.RC1", "310p"): [],
    ("8.5.0", "910b"): ALL,
    ("8.5.0", "910"): [],
    ("8.5.0", "310p"): [],
    ("8.5.0", "a3"): ALL,
    ("9.0.0", "910b"): ALL,
    ("9.0.0", "910"): [],
    ("9.0.0", "310p"): [],
    ("9.0.0", "a3"): ALL,
}


def test_new_in_an_empty_directory_for_every_release_and_chip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from builder.manifest import catalog

    listed = {(v, chip) for v, r in catalog.releases().items() if r.files for chip in r.chips}
    assert listed == set(EXPECTED)  # a new catalog release needs a row here
    monkeypatch.chdir(tmp_path)
    for (version, chip), components in EXPECTED.items():
        code, out, err = run_cli(capsys, "new", version, "--chip", chip)
        assert code == 0, err
        path = tmp_path / "stacks" / f"{version}-{chip}.yaml"
        assert out.strip() == str(path)
        loaded = manifest.load(path)
        assert loaded.name == f"{version}-{chip}"
        assert [c.id for c in loaded.components] == components, (version, chip)
        code, out, err = run_cli(capsys, "check", f"{version}-{chip}")
        assert code == 0 and out.strip().splitlines()[-1] == f"compatible: {version}-{chip}", err
        # Only the checks that had something to compare: upstream needs with components, torch-npu with its pin.
        checked = [line.split(" against ")[0] for line in out.splitlines() if line.startswith("checked  ")]
        release = catalog.releases()[version]
        upstream = [f"checked  {', '.join(f'component {c}' for c in components)}"] if components else []
        npu = [f"checked  torch-npu {catalog.paired_torch_npu(version)[-1]} (tilelang-ascend)"]
        assert checked == [
            f"checked  chip {chip} among those CANN {version} is released for (ascend-deployer CANN_{version}.json)",
            f"checked  host driver {release.driver}",
            "checked  OS ubuntu 22.04, Python 3.10",
            "checked  toolkit x86_64, toolkit aarch64, ops x86_64, ops aarch64: file name and sha256",
            *upstream,
            *(npu if "tilelang-ascend" in components else []),
        ], out
        refs = {c.id: c.source.ref for c in loaded.components if hasattr(c.source, "ref")}
        if "catlass" in refs:
            assert refs["catlass"] == ("v1.6.3" if version in ("8.5.0", "9.0.0") else "v1.5.0")
            catlass = next(c for c in loaded.components if c.id == "catlass")
            assert catlass.depends_on == []  # built on the toolkit's Ascend C
        expect = "Compare success." if "catlass" in components else "toolkit ready"
        assert loaded.smoke.expect == expect
        assert loaded.compile_cache == ("ccache" if components else None)  # a toolkit-only stack compiles nothing


# asc-devkit built from source over the toolkit's, as a stack of one's own may (not the template's).
DEVKIT = """  - id: asc-devkit
    source: {git: "https://github.com/hicann/asc-devkit.git", ref: "v8.5.0"}
    build: [bash build.sh --pkg]
"""


def test_new_from_a_stack_drops_a_layer_the_release_does_not_support_and_what_depends_on_it() -> None:
    from builder.manifest import new

    template = new.packaged_template("8.3.RC1")
    template["components"].insert(0, yaml.safe_load(DEVKIT)[0])
    catlass = next(c for c in template["components"] if c["id"] == "catlass")
    catlass["depends_on"] = ["asc-devkit"]
    data = new.new_manifest(template, "8.3.RC1", "910b", "x")  # asc-devkit: CANN >= 8.5.0
    assert [c["id"] for c in data["components"]] == ["tilelang-ascend", "catlass"]
    assert next(c for c in data["components"] if c["id"] == "catlass")["depends_on"] == []


def test_check_refuses_a_layer_on_a_release_or_chip_it_does_not_support(tmp_path: Path) -> None:
    from builder.manifest import compat
    from tests.conftest import ROOT

    text = (ROOT / "stacks" / "8.5.0.yaml").read_text().replace("\nsmoke:", f"\n{DEVKIT}smoke:")
    path = tmp_path / "m.yaml"
    path.write_text(text.replace("chip: 910b", "chip: 310p").replace("910b-ops", "310p-ops"))
    errors = compat.check(manifest.load(path)).errors
    assert any(
        e.startswith("component catlass (catlass) does not support chip 310p (only 910b, a3, 950") for e in errors
    )
    assert any(e.startswith("component asc-devkit (asc-devkit) does not support chip 310p") for e in errors)


def test_new_pins_torch_npu_to_the_catalogs_newest_pairing_that_fits_a_pinned_torch() -> None:
    """The template leaves torch and torch-npu unpinned: `new` pins both to the newest pair the catalog
    lists for the release; a torch pinned already (a stack given to --from) picks the pair it fits,
    and a torch-npu pinned already is left alone."""
    from builder.manifest import new

    def pinned(packages: list[str], version: str = "8.5.0") -> list[str]:
        template = new.packaged_template(version)
        comp = next(c for c in template["components"] if c["id"] == "tilelang-ascend")
        comp["python_packages"] = packages
        data = new.new_manifest(template, version, "910b", "x")
        packages_now: list[str] = next(c for c in data["components"] if c["id"] == "tilelang-ascend")["python_packages"]
        return packages_now

    template = new.packaged_template("8.5.0")
    lines = next(c for c in template["components"] if c["id"] == "tilelang-ascend")["python_packages"]
    assert "torch" in lines and "torch-npu" in lines  # as upstream's requirements have them
    assert pinned(["numpy", "torch", "torch-npu"]) == ["numpy", "torch==2.9.0", "torch-npu==2.9.0"]
    assert pinned(["torch==2.7.1", "torch-npu"]) == ["torch==2.7.1", "torch-npu==2.7.1.post2"]
    assert pinned(["torch", "torch-npu==2.8.0.post2"]) == ["torch", "torch-npu==2.8.0.post2"]
    assert pinned(["torch==1.0", "torch-npu"]) == ["torch==1.0", "torch-npu"]  # no pair fits: left for check


@pytest.mark.parametrize("chip", ["910b", "a3"])
def test_the_shipped_9_0_0_stack_is_what_new_writes_for_9_0_0_on_either_chip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], chip: str
) -> None:
    """stacks/9.0.0.yaml (910b) is `new 9.0.0 --user root` as written, but for its name and description
    (the shipped stacks' images keep running as root); on a3 only the ops packages (the catalog's A3
    files) differ: the components, their refs, the torch-npu pin (2.10.0, the catalog's newest pairing),
    the driver (26.0.RC1) and the rest are the same."""
    out = tmp_path / "new.yaml"
    code, _, err = run_cli(capsys, "new", "9.0.0", "--chip", chip, "--name", "9.0.0", "--user", "root", "-o", str(out))
    assert code == 0, err
    written = manifest.load(out).model_dump(mode="json", exclude={"description"})
    shipped = manifest.load(ROOT / "stacks" / "9.0.0.yaml").model_dump(mode="json", exclude={"description"})
    entries = catalog_entries("9.0.0")
    ops = written["toolkit"]["packages"].pop("ops")
    assert {a: (p["file"], p["sha256"]) for a, p in ops.items()} == {
        a: (name, entries[name]["sha256"])
        for a in ("x86_64", "aarch64")
        for name in [f"Ascend-cann-{'A3' if chip == 'a3' else '910b'}-ops_9.0.0_linux-{a}.zip"]
    }
    shipped["toolkit"]["packages"].pop("ops")
    assert written == shipped | {"toolkit": shipped["toolkit"] | {"chip": chip}}
    pins = [p for p in shipped["components"][0]["python_packages"] if p.startswith("torch")]
    assert (shipped["host"]["driver"], pins) == ("26.0.RC1", ["torch==2.10.0", "torch-npu==2.10.0"])
    assert {c["id"]: c["source"]["ref"] for c in shipped["components"]} == {
        "tilelang-ascend": "ascendc_pto",
        "catlass": "v1.6.3",
    }


def test_new_for_an_unknown_version_and_bad_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(
        capsys, "--root", str(ROOT), "new", "1.2.3", "--chip", "910b", "-o", str(tmp_path / "x.yaml")
    )
    assert code == 2 and "CANN 1.2.3 has no package list in the catalog" in err
    (tmp_path / "exists.yaml").write_text("mine\n")
    code, _, err = run_cli(
        capsys, "--root", str(ROOT), "new", "8.5.0", "--chip", "910b", "-o", str(tmp_path / "exists.yaml")
    )
    assert code == 2 and "exists" in err and (tmp_path / "exists.yaml").read_text() == "mine\n"
    code, _, err = run_cli(capsys, "--root", str(ROOT), "new", "8.5.0", "--chip", "910b", "-o", "/proc/x/y.yaml")
    assert code == 2 and "cannot write there" in err
    code, _, err = run_cli(
        capsys,
        "--root",
        str(tmp_path),
        "new",
        "8.5.0",
        "--chip",
        "910b",
        "--from",
        str(ROOT / "stacks" / "8.5.0.yaml"),
        "--name",
        "bad name",
    )
    assert code == 2 and "--name 'bad name'" in err
    assert not (tmp_path / "stacks").exists()


def test_new_writes_canns_driver_user_and_takes_another_or_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The images of a new stack run as HwHiAiUser 1000:1000 (the IDs hosts give it for AscendHub's
    images); --user gives this host's IDs, or root (the official images' user); a bad one is one line."""

    def written(*user: str) -> object:
        out = tmp_path / f"{len(list(tmp_path.iterdir()))}.yaml"
        code, _, err = run_cli(capsys, "new", "8.5.0", "--chip", "910b", *user, "-o", str(out))
        assert code == 0, err
        return manifest.load(out).user

    assert written() == RunUser(name="HwHiAiUser", uid=1000, gid=1000)
    assert written("--user", "HwHiAiUser:1001:1002") == RunUser(name="HwHiAiUser", uid=1001, gid=1002)
    assert written("--user", "root") == "root"
    for bad, says in [
        ("HwHiAiUser", "give NAME:UID:GID"),
        ("HwHiAiUser:1000:-1", "give NAME:UID:GID"),
        ("HwHiAiUser:70000:1000", "70000 is out of range"),
        ("Hw;rm:1000:1000", "'Hw;rm' is not a user name useradd takes"),
    ]:
        code, out, err = run_cli(
            capsys, "new", "8.5.0", "--chip", "910b", "--user", bad, "-o", str(tmp_path / "x.yaml")
        )
        assert (code, out) == (2, "") and len(err.splitlines()) == 1 and says in err, err
    assert not (tmp_path / "x.yaml").exists()
