"""An image handed to a Kubernetes cluster: the Pod (and the smoke's Job) `stackbuild run TAG --print
--format k8s` writes, asking the Ascend device plugin for the NPUs as its resource and mounting the
host's driver paths read-only, as `run` does on one host; an image that runs as a user runs as it
(its numeric IDs: runAsNonRoot can check them), with the host's NPU group, as `run` adds it."""

from __future__ import annotations

import re
from typing import Any

import yaml

from builder.handoff.contents import Contents
from builder.model.errors import InputError
from builder.model.layout import DRIVER_MOUNTS

# The device plugin's resource per chip: Ascend/ascend-device-plugin's README and HAMi's Ascend guide
# request 910 and 910B NPUs as huawei.com/Ascend910, 310P ones as huawei.com/Ascend310P. Other chips'
# names are not written here until seen in the plugin's own text.
RESOURCES = {"910": "huawei.com/Ascend910", "910b": "huawei.com/Ascend910", "310p": "huawei.com/Ascend310P"}


def _name(contents: Contents, suffix: str) -> str:
    """A DNS-1123 label: the stack, the image's variant, suffix."""
    name = re.sub(r"[^a-z0-9-]+", "-", f"{contents.lock.stack}-{contents.flavor}-{suffix}".lower()).strip("-")
    return name[:63].rstrip("-")


def _container(contents: Contents, command: list[str], npus: int) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": contents.image}
    if command:
        container["args"] = command  # after the image's entrypoint, which sources CANN's scripts
    if contents.describe()["certified_host"]["driver"] in (None, "none"):
        return container  # a CPU stack: no NPU and no driver
    chip = contents.lock.toolkit.chip
    if chip not in RESOURCES:
        raise InputError(
            f"--format k8s: no device plugin resource is known here for chip {chip} (known: 910, 910b, 310p)"
        )
    container["resources"] = {"limits": {RESOURCES[chip]: str(npus)}}  # a quantity: a string, as the API's model has it
    container["volumeMounts"] = [
        {"name": _volume(path), "mountPath": path.rstrip("/"), "readOnly": True} for path in DRIVER_MOUNTS
    ]
    return container


def _volume(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-")


def _spec(contents: Contents, container: dict[str, Any], groups: tuple[int, ...]) -> dict[str, Any]:
    """groups: the NPU group of this host (verify.host.npu_group), the nodes' alike: supplementary groups
    of an image that runs as a user and is given NPUs."""
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [container]}
    if user := contents.run_user():
        context: dict[str, Any] = {"runAsUser": user.uid, "runAsGroup": user.gid, "runAsNonRoot": True}
        if groups and "resources" in container:
            context["supplementalGroups"] = list(groups)
        spec["securityContext"] = context
    if "volumeMounts" in container:
        spec["volumes"] = [{"name": _volume(p), "hostPath": {"path": p.rstrip("/")}} for p in DRIVER_MOUNTS]
    return spec


def pod(contents: Contents, command: list[str], npus: int = 1, groups: tuple[int, ...] = ()) -> dict[str, Any]:
    """A Pod running command (none: the image's own) in the image with npus NPUs from the device plugin."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": _name(contents, "run"), "labels": {"app.kubernetes.io/managed-by": "stackbuild"}},
        "spec": _spec(contents, _container(contents, command, npus), groups),
    }


def smoke_job(contents: Contents, groups: tuple[int, ...] = ()) -> dict[str, Any] | None:
    """A Job running the smoke command the image carries (None: it carries none)."""
    smoke = contents.smoke()
    if smoke is None:
        return None
    container = _container(contents, ["bash", "-c", smoke.command], 1)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": _name(contents, "smoke"),
            "labels": {"app.kubernetes.io/managed-by": "stackbuild"},
            # What its log must match to pass, as `stackbuild smoke` checks it.
            "annotations": {"stackbuild/smoke-expect": smoke.expect},
        },
        "spec": {"backoffLimit": 0, "template": {"spec": _spec(contents, container, groups)}},
    }


def manifests(contents: Contents, command: list[str], npus: int = 1, groups: tuple[int, ...] = ()) -> str:
    """The Pod, then the smoke's Job, as one YAML stream for `kubectl apply -f -`; each runs as the image's
    user (if not root), with groups added where it is given NPUs."""
    documents = [pod(contents, command, npus, groups), *filter(None, [smoke_job(contents, groups)])]
    return yaml.safe_dump_all(documents, sort_keys=False)
