"""`stackbuild run TAG --print --format k8s`: a Pod and the smoke's Job that the Kubernetes client itself
reads back field for field (deserialising alone drops unknown fields, so the model is serialised again
and compared with what was written)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client import ApiClient

from builder.cli.context import Context
from builder.lock import io as lock_io
from builder.plan.labels import (
    LOCK_IN_IMAGE,
    SMOKE_COMMAND,
    SMOKE_EXPECT,
    SMOKE_NEEDS_DEVICE,
    USER_GID,
    USER_NAME,
    USER_UID,
)
from tests.conftest import ROOT
from tests.fake_engine import FakeEngine
from tests.helpers import ascend_host, run_cli

IMAGE = "registry.example.com/team/8.5.0:8.5.0-910b-ubuntu22.04-py3.11-runtime-x86_64"
LABELS = {
    "org.stackbuild.host.driver": "25.5.0",
    "org.opencontainers.image.title": "8.5.0 runtime image",
    SMOKE_COMMAND: "cd /opt/stack/catlass && ./00_basic_matmul 256 512 1024 0",
    SMOKE_EXPECT: "Compare success",
    SMOKE_NEEDS_DEVICE: "true",
}


def read_back(document: dict[str, Any], kind: str) -> dict[str, Any]:
    client: Any = ApiClient()  # untyped
    model = client.deserialize(json.dumps(document), kind, "application/json")  # as a response's body
    serialised: dict[str, Any] = client.sanitize_for_serialization(model)
    return serialised


@pytest.fixture
def k8s(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeEngine:
    engine = FakeEngine(image_labels={IMAGE: LABELS})
    engine.image_files[IMAGE] = {
        LOCK_IN_IMAGE: lock_io.text(lock_io.read(ROOT / "lockfiles" / "8.5.0.lock.json")).encode()
    }
    monkeypatch.setattr(Context, "engine", lambda *_: engine)
    monkeypatch.chdir(tmp_path)
    return engine


def test_the_pod_and_the_smoke_job_are_what_the_kubernetes_client_reads(
    k8s: FakeEngine, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(
        capsys, "run", "--print", "--format", "k8s", "--device", "0", "--device", "1", IMAGE, "--", "npu-smi", "info"
    )
    assert code == 0, err
    pod, job = yaml.safe_load_all(out)
    assert read_back(pod, "V1Pod") == pod and read_back(job, "V1Job") == job
    container = pod["spec"]["containers"][0]
    assert container["image"] == IMAGE and container["args"] == ["npu-smi", "info"]
    assert container["resources"] == {"limits": {"huawei.com/Ascend910": "2"}}
    assert all(m["readOnly"] for m in container["volumeMounts"])
    assert {v["hostPath"]["path"] for v in pod["spec"]["volumes"]} >= {
        "/usr/local/Ascend/driver/lib64",
        "/usr/local/dcmi",
    }
    smoke = job["spec"]["template"]["spec"]["containers"][0]
    assert smoke["args"][-1] == LABELS[SMOKE_COMMAND]
    assert job["metadata"]["annotations"] == {"stackbuild/smoke-expect": "Compare success"}


def test_k8s_goes_with_print(k8s: FakeEngine, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "run", "--format", "k8s", IMAGE)
    assert code == 2 and "give --print with it" in err


def test_an_image_that_runs_as_a_user_runs_as_it_with_the_hosts_npu_group(
    k8s: FakeEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """By number (runAsNonRoot checks it), with this host's NPU group where the Pod is given NPUs; a root
    image gets no securityContext, as before."""
    host = ascend_host(tmp_path / "host")
    (host / "etc" / "group").write_text("HwHiAiUser:x:1234:\n")
    monkeypatch.setenv("STACKBUILD_HOST_ROOT", str(host))
    assert all("securityContext" not in d["spec"].get("template", d)["spec"] for d in documents(capsys))
    k8s.image_labels[IMAGE] |= {USER_NAME: "HwHiAiUser", USER_UID: "1000", USER_GID: "1001"}
    pod, job = documents(capsys)
    assert read_back(pod, "V1Pod") == pod and read_back(job, "V1Job") == job
    expected = {"runAsUser": 1000, "runAsGroup": 1001, "runAsNonRoot": True, "supplementalGroups": [1234]}
    assert pod["spec"]["securityContext"] == expected
    assert job["spec"]["template"]["spec"]["securityContext"] == expected


def documents(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    code, out, err = run_cli(capsys, "run", "--print", "--format", "k8s", IMAGE)
    assert code == 0, err
    return list(yaml.safe_load_all(out))
