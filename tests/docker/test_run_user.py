"""Images that run as a user (the manifest's `user`, issue 55): the reference stack built with CANN's
HwHiAiUser runs as it, with a passwd entry and a writable home, its probes and smoke pass as it, its
user is dated by the lock and its finals are the same bytes built again; `user: root` written out gives
today's images."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builder.engine.docker_engine import DockerEngine
from builder.model.arch import Arch
from tests.docker.conftest import plan_of, stackbuild, write_variant

FINALS = ("runtime-image", "devel-image")
SECONDS_PER_DAY = 86400


def config_user(engine: DockerEngine, image: str) -> str:
    """The USER of image's config ("": root)."""
    data: dict[str, Any] = engine.client.api.inspect_image(image)  # type: ignore[no-untyped-call]
    return str(data["Config"].get("User") or "")


def test_images_built_with_a_run_user_run_as_it_and_pass_their_smoke(workspace: Path, engine: DockerEngine) -> None:
    name = write_variant(
        workspace, "reftest-user", [("\nsmoke:", "\nuser: {name: HwHiAiUser, uid: 1000, gid: 1000}\nsmoke:")]
    )
    stackbuild(workspace, "lock", name, check=True)
    built = stackbuild(workspace, "build", name, check=True)  # every stage probed, the finals' as the user
    assert "smoke: launch: passed" in built.stdout + built.stderr
    plan = plan_of(workspace, name)
    epoch_day = plan.source_date_epoch // SECONDS_PER_DAY
    ids = {}
    for final in FINALS:
        tag = plan.final_tags[final]
        ids[final] = engine.image_id(tag)
        assert config_user(engine, tag) == "1000:1000"
        script = 'id -un; id -u; id -g; getent passwd "$(id -un)"; echo "$HOME"; touch "$HOME/x" && echo writable'
        run = stackbuild(workspace, "run", tag, "--", "bash", "-c", script)
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.stdout.splitlines() == [
            "HwHiAiUser",
            "1000",
            "1000",
            "HwHiAiUser:x:1000:1000::/home/HwHiAiUser:/bin/bash",
            "/home/HwHiAiUser",
            "writable",
        ]
        # The toolkit and the components are the user's to read and run (CANN's --install-for-all modes).
        reads = stackbuild(workspace, "run", tag, "--", "bash", "-c", 'ldd "$ASCEND_HOME_PATH"/lib64/libascendcl.so')
        assert reads.returncode == 0 and "libc.so" in reads.stdout, reads.stdout + reads.stderr
        # The shadow entry's last change is the lock's day, not the build's.
        shadow = engine.files(tag, ["/etc/shadow"], Arch.host())["/etc/shadow"].decode()
        entry = next(line for line in shadow.splitlines() if line.startswith("HwHiAiUser:"))
        assert entry.split(":")[2] == str(epoch_day)
    shell = stackbuild(workspace, "shell", name, "devel-image", "--", "id", "-un")  # a stage's shell as it runs
    assert (shell.returncode, shell.stdout.strip()) == (0, "HwHiAiUser"), shell.stderr[-2000:]
    smoke = stackbuild(workspace, "smoke", plan.final_tags["runtime-image"])  # the carried smoke, as a teammate
    assert smoke.returncode == 0 and "Kernel launch success!" in smoke.stdout, smoke.stdout + smoke.stderr
    # Built again from their cached parents, the finals are the same images.
    for final in FINALS:
        engine.remove(plan.final_tags[final])
        engine.remove(plan.stages[final].tag())
    stackbuild(workspace, "build", name, "--no-smoke", check=True)
    assert {final: engine.image_id(plan.final_tags[final]) for final in FINALS} == ids


def test_user_root_written_out_gives_todays_images(workspace: Path, engine: DockerEngine) -> None:
    stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)
    before = plan_of(workspace, "reftest")
    ids = {final: engine.image_id(before.final_tags[final]) for final in FINALS}
    manifest = workspace / "stacks" / "reftest.yaml"
    text = manifest.read_text()
    manifest.write_text(text.replace("\nsmoke:", "\nuser: root\nsmoke:"))
    try:
        after = plan_of(workspace, "reftest")
        assert {n: s.key for n, s in after.stages.items()} == {n: s.key for n, s in before.stages.items()}
        stackbuild(workspace, "build", "reftest", "--no-smoke", check=True)  # the same lock agrees
        assert {final: engine.image_id(after.final_tags[final]) for final in FINALS} == ids
        assert all(config_user(engine, i) == "" for i in ids.values() if i)
    finally:
        manifest.write_text(text)
