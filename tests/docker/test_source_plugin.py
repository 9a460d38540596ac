"""`inspect` of an image whose lock holds a kind of source stackbuild does not have, added as one
plug-in module (tests/unit/inputs/test_source_plugins.py adds it and shows the manifest, schema, lock,
render and vendor handle it): the image is the final image's last layer as rendered (its lock and
its labels, imported as the only layer), read back through the engine."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

from dockerfile_parse import DockerfileParser

from builder.engine.docker_engine import DockerEngine
from tests.conftest import TEST_PREFIX
from tests.helpers import http_server, serving_bytes
from tests.plugins.installed import install, stackbuild
from tests.unit.inputs.test_source_plugins import STACK, _tarball


def test_inspect_describes_a_plugin_kinds_source(tmp_path: Path, engine: DockerEngine) -> None:
    install(tmp_path / "site", "stackbuild.sources", "http", "tests.plugins.stackbuild_http_source:KIND")
    (tmp_path / "project" / "stacks").mkdir(parents=True)
    tarball = _tarball()
    with http_server(serving_bytes(lambda: tarball)) as url:
        (tmp_path / "project" / "stacks" / "demo.yaml").write_text(STACK.replace("URL", url))
        assert stackbuild(tmp_path, "lock", "demo").returncode == 0
        rendered = stackbuild(tmp_path, "render", "demo", "-o", str(tmp_path / "rendered"))
        assert rendered.returncode == 0, rendered.stderr
    devel = tmp_path / "rendered" / "devel-image"
    labels = DockerfileParser(str(tmp_path / "rendered" / "devel-image.Dockerfile")).labels
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        tar.add(devel / "stack.lock.json", "etc/stackbuild/stack.lock.json")
    tag = f"{TEST_PREFIX}/plugin-inspect:latest"
    changes = [f"LABEL {json.dumps(key)}={json.dumps(value)}" for key, value in labels.items()]
    engine.client.api.import_image_from_data(
        layer.getvalue(), repository=tag.rsplit(":", 1)[0], tag="latest", changes=changes
    )
    try:
        inspected = stackbuild(tmp_path, "inspect", tag, "--json")
        assert inspected.returncode == 0, inspected.stderr
        described = json.loads(inspected.stdout)
        assert described["components"]["web"] == {
            "url": f"{url}/web.tar",
            "sha256": hashlib.sha256(tarball).hexdigest(),
        }
        assert stackbuild(tmp_path, "inspect", tag, plugin=False).returncode != 0  # the lock names a kind it lacks
    finally:
        engine.client.api.remove_image(tag)
