"""Component declarations: installs outside the component directory, network."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from builder import manifest
from builder.execute import chain
from builder.manifest.loading import json_schema
from builder.verify.installs import added_files, collisions
from tests.golden_plan import GOLDEN, golden_lock, golden_request
from tests.helpers import run_cli

INSTALLS = {
    "devkit": "    installs:\n      - {path: /usr/local/Ascend/devkit-tools, runtime: true}\n"
    "      - {path: /usr/local/lib/libdevkit.so}\n",
    "kernels": "    installs: [{path: /usr/local/kernels-bin}]\n    network: true\n",
}


def golden_with(tmp_path: Path, additions: dict[str, str]) -> Path:
    text = (GOLDEN / "golden.yaml").read_text()
    for component, lines in additions.items():
        marker = f"  - id: {component}\n"
        start = text.index(marker)
        insert = text.index("    build:", start)
        text = text[:insert] + lines + text[insert:]
    path = tmp_path / "golden.yaml"
    path.write_text(text)
    return path


def test_installs_travel_to_dependents_and_finals_and_are_probed(tmp_path: Path) -> None:
    path = golden_with(tmp_path, INSTALLS)
    request = golden_request(path)
    locked = golden_lock(request.manifest).sealed()
    plan = chain.plan(dataclasses.replace(request, manifest_path=path, lock=locked), print)
    devkit = "devkit"  # the parents header names devkit's image as the stage devkit
    kernels = plan.stages["kernels"].dockerfile
    assert f"ARG DEVKIT_IMAGE={plan.stages['devkit'].tag()}\n" in kernels
    assert "FROM ${DEVKIT_IMAGE} AS devkit\n" in kernels
    # What devkit's build added to its install paths (staged by installs.py), never the paths whole: a
    # parent's files there would be copied again.
    assert f'COPY --from={devkit} ["/opt/stackbuild/installs/devkit/", "/"]' in kernels
    assert "/usr/local/Ascend/devkit-tools" not in kernels.split("FROM toolkit", 1)[1]
    devel = plan.stages["devel-image"].dockerfile
    assert 'COPY --from=kernels ["/opt/stackbuild/installs/kernels/", "/"]' in devel
    assert 'COPY --from=devkit ["/opt/stackbuild/installs/devkit/", "/"]' in devel
    runtime = plan.stages["runtime-image"].dockerfile
    devkit_tools = '["/opt/stackbuild/installs/devkit/usr/local/Ascend/devkit-tools", "/usr/local/Ascend/devkit-tools"]'
    assert devkit_tools in runtime and "libdevkit.so" not in runtime and "kernels-bin" not in runtime
    build = dict(plan.stages["devkit"].files)["steps/build.sh"]
    assert "installs.py before /tmp/stackbuild-installs-devkit.json /usr/local/Ascend/devkit-tools" in build
    assert {"kind": "exists", "paths": ["/usr/local/kernels-bin"]} in plan.stages["kernels"].probes
    assert plan.stages["kernels"].network and not plan.stages["devkit"].network
    assert plan.stages["kernels"].key != chain.plan(golden_request(), print).stages["kernels"].key


@pytest.mark.parametrize(
    ("devkit", "kernels", "message"),
    [
        ("/usr/local", "/usr/local/y", "components[0].installs[0].path: /usr/local is a whole system directory"),
        ("usr/local/x", "/usr/local/y", "an install is an absolute path"),
        ("/opt/stack/kernels/x", "/usr/local/y", "a component's own"),
    ],
)
def test_installs_that_are_too_broad_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], devkit: str, kernels: str, message: str
) -> None:
    path = golden_with(
        tmp_path,
        {"devkit": f"    installs: [{{path: {devkit}}}]\n", "kernels": f"    installs: [{{path: {kernels}}}]\n"},
    )
    code, _, err = run_cli(capsys, "validate", str(path))
    assert code == 2 and message in err, err


def test_installs_sharing_a_directory_are_fine(tmp_path: Path) -> None:
    path = golden_with(
        tmp_path,
        {
            "devkit": "    installs: [{path: /usr/local/Ascend/cann/a}]\n",
            "kernels": "    installs: [{path: /usr/local/Ascend/cann/b}]\n",
        },
    )
    assert [c.installs[0].path for c in manifest.load(path).components] == [
        "/usr/local/Ascend/cann/a",
        "/usr/local/Ascend/cann/b",
    ]


def test_schema_documents_the_new_fields(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "schema")
    assert code == 0
    for text in (
        "what the build installs outside /opt/stack/<id>",
        "the build reaches the network",
        "absolute path the build installs",
    ):
        assert text in out


def test_a_file_two_components_add_is_a_collision_a_shared_directory_is_not() -> None:
    """Files under the install paths, per component; the toolkit's own and a dependency's unchanged ones
    are not added by the component whose image merely holds them."""
    toolkit = {"/cann/lib/base.so": "t"}
    listings = {
        "devkit": {"/cann/lib/base.so": "t", "/cann/lib/devkit.so": "d"},
        "kernels": {"/cann/lib/base.so": "t", "/cann/lib/devkit.so": "d", "/cann/lib/kernels.so": "k"},
        "tools": {"/cann/lib/tools.so": "x"},
    }
    needs = {"kernels": {"devkit"}}
    assert collisions(added_files(listings, toolkit, needs)) == []
    rewritten = {**listings, "kernels": {**listings["kernels"], "/cann/lib/devkit.so": "changed"}}
    assert collisions(added_files(rewritten, toolkit, needs)) == [
        "/cann/lib/devkit.so is installed by both devkit and kernels"
    ]
    twice = {**listings, "tools": {"/cann/lib/tools.so": "x", "/cann/lib/devkit.so": "d"}}
    assert collisions(added_files(twice, toolkit, needs)) == [
        "/cann/lib/devkit.so is installed by both devkit and tools"
    ]


def test_the_schema_documents_the_component_model() -> None:
    """What issue 9 added (and what it relies on) is explained in `stackbuild schema`."""
    schema = json_schema()
    defs = schema["$defs"]
    documented = {
        "Manifest": ["system_packages", "runtime_system_packages", "apt_repositories", "python_index"],
        "Component": ["system_packages", "python_packages", "installs", "network", "build", "env"],
        "GitSource": ["git", "ref", "keep_git"],
        "AptRepository": ["url", "suite", "components", "trusted"],
        "Platform": ["python", "python_from"],
        "Install": ["path", "runtime"],
        "Toolkit": ["preinstalled", "version", "chip"],
    }
    for model, fields in documented.items():
        properties = schema["properties"] if model == "Manifest" else defs[model]["properties"]
        for name in fields:
            assert properties[name].get("description"), f"{model}.{name} has no description"
