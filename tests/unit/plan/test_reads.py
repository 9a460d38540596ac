"""What a stage's build reads of each parent (builder.plan.reads), which decides whether it may build
on a parent's image as built, before that parent is normalised."""

from __future__ import annotations

from builder.plan.reads import parent_reads, sees
from tests.golden_plan import golden_plan

HEADER = "ARG TOOLKIT_IMAGE=t\nARG DEVKIT_IMAGE=d\nFROM ${TOOLKIT_IMAGE} AS toolkit\nFROM ${DEVKIT_IMAGE} AS devkit\n"


def test_a_parent_built_from_is_read_whole_and_one_copied_from_only_where_copied() -> None:
    plan = golden_plan()
    reads = dict(plan.stages["runtime-image"].reads)
    # From 8.5.0 CANN's runtime subset is installed in a build stage FROM the devel base: read whole.
    assert reads["base-runtime"] == reads["base-devel"] == ("/",)
    assert reads["devkit"] == ("/opt/stack/devkit/output",)
    assert dict(plan.stages["kernels"].reads) == {"toolkit": ("/",), "devkit": ("/opt/stack/devkit/output",)}
    # Before, the runtime image copies the toolkit stage's tree, and reads it only there.
    assert dict(golden_plan("8.3.RC1").stages["runtime-image"].reads)["toolkit"] == ("/usr/local/Ascend",)


def test_copies_in_both_forms_with_flags_are_read_and_what_is_not_understood_is_read_whole() -> None:
    dockerfile = HEADER + (
        "FROM scratch\n"
        'COPY --from=devkit --chown=0:0 ["/opt/a", "/opt/b/", "/to/"]\n'
        "COPY --from=toolkit /usr/x /usr/y /to/\n"
    )
    assert parent_reads(dockerfile, ("toolkit", "devkit")) == (
        ("toolkit", ("/usr/x", "/usr/y")),
        ("devkit", ("/opt/a", "/opt/b/")),
    )
    mounted = "RUN --mount=type=bind,from=toolkit,target=/t true\n"
    wild = HEADER + "FROM scratch\nCOPY --from=devkit /opt/*.so /to/\n" + mounted
    assert parent_reads(wild, ("toolkit", "devkit")) == (("toolkit", ("/",)), ("devkit", ("/",)))


def test_a_changed_file_is_seen_only_under_a_path_read() -> None:
    changed = ["var/log/ascend_seclog/ascend_install.log", "opt/stack/devkit/build/CMakeFiles/CMakeOutput.log"]
    assert not sees(["/usr/local/Ascend/cann-8.5.0/lib64", "/opt/stack/devkit/output"], changed)
    assert sees(["/opt/stack/devkit/build/"], changed)
    assert sees(["/var/log/ascend_seclog/ascend_install.log"], changed)
    assert not sees(["/var/log/ascend"], changed)  # a prefix of a name is not a directory above it
    assert sees(["/"], changed) and not sees(["/"], [])


def test_a_variable_in_a_source_or_a_flag_in_from_is_read_whole() -> None:
    dockerfile = HEADER + "FROM --platform=linux/amd64 toolkit\nCOPY --from=devkit ${HOME}/lib /to/\n"
    assert parent_reads(dockerfile, ("toolkit", "devkit")) == (("toolkit", ("/",)), ("devkit", ("/",)))


def test_a_path_through_a_symbolic_link_of_the_changed_layers_is_read_whole() -> None:
    """COPY follows a link in its source path: CANN's cann -> cann-8.5.0 reaches what it points to."""
    changed = ["usr/local/Ascend/cann-8.5.0/python/x.pyc"]
    copied = ["/usr/local/Ascend/cann/lib64"]
    assert not sees(copied, changed)
    assert sees(copied, changed, links=["usr/local/Ascend/cann"])
    assert not sees(copied, [], links=["usr/local/Ascend/cann"])  # nothing changed: nothing to see
    assert not sees(["/usr/local/Ascend/cannot"], changed, links=["usr/local/Ascend/cann"])
