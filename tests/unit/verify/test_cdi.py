"""The host's CDI specs for its NPUs (issue 55 item 2): which CDI device gives which /dev/davinci<N>,
read from CDI's spec directories under a fake host root; no vendor kind assumed, and only names of
CDI's shape ever reach a command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.model.errors import InputError
from builder.verify.cdi import cdi_access, npu_devices
from tests.helpers import CDI_KIND as KIND
from tests.helpers import cdi_host, npu


def test_each_device_adding_npu_nodes_is_found_with_its_npus(tmp_path: Path) -> None:
    root = cdi_host(tmp_path, [npu("0", 0), npu("1", 1), npu("all", 0, 1), {"name": "gpu", "containerEdits": {}}])
    found = [(d.qualified, d.npus, d.spec) for d in npu_devices(root)]
    assert found == [
        (f"{KIND}=0", (0,), "/etc/cdi/npus.json"),
        (f"{KIND}=1", (1,), "/etc/cdi/npus.json"),
        (f"{KIND}=all", (0, 1), "/etc/cdi/npus.json"),
    ]


def test_the_dynamic_directory_and_yaml_are_read(tmp_path: Path) -> None:
    (tmp_path / "var/run/cdi").mkdir(parents=True)
    (tmp_path / "var/run/cdi/npus.yaml").write_text(
        f"cdiVersion: 0.6.0\nkind: {KIND}\ndevices:\n- name: npu3\n  containerEdits:\n"
        "    deviceNodes:\n    - path: /dev/davinci3\n"
    )
    assert [d.qualified for d in npu_devices(tmp_path)] == [f"{KIND}=npu3"]


def test_names_not_of_cdis_shape_never_reach_the_line(tmp_path: Path) -> None:
    cdi_host(tmp_path, [npu("0;rm -rf /", 0), npu("-v/:/host", 1), npu("ok", 2)])
    assert [d.qualified for d in npu_devices(tmp_path)] == [f"{KIND}=ok"]
    cdi_host(tmp_path, [npu("0", 0)], kind="vendor.example/npu --privileged")
    assert npu_devices(tmp_path) == []
    (tmp_path / "etc/cdi/npus.json").write_text("{not: [json")
    assert npu_devices(tmp_path) == []


def test_the_picked_npus_or_each_single_npu_device(tmp_path: Path) -> None:
    root = cdi_host(tmp_path, [npu("0", 0), npu("1", 1), npu("all", 0, 1)])
    assert cdi_access(root).devices == (f"{KIND}=0", f"{KIND}=1")
    assert cdi_access(root, [1]).devices == (f"{KIND}=1",)
    with pytest.raises(InputError, match=r"^--device 2: no CDI device gives NPU 2 alone \(they give: 0, 1\)$"):
        cdi_access(root, [2])
    only_all = cdi_host(tmp_path / "b", [npu("all", 0, 1)])
    assert cdi_access(only_all).devices == (f"{KIND}=all",)


def test_no_spec_is_one_line_naming_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^--format cdi: no CDI spec in /etc/cdi or /var/run/cdi adds a /dev/davinci"):
        cdi_access(tmp_path)
