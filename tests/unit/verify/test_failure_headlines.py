"""The headline a failure is told by (builder.verify.diagnose): a failed install of locked .debs gives
apt's or dpkg's reason, from the install script's marked lines (as a docker-tier build prints them:
tests/docker/test_deb_install.py); a failed build step, the step and its tool's first words of why;
the runtime image's known failures, explained; any other, the builder's own words."""

from __future__ import annotations

import pytest

from builder.verify.diagnose import diagnose, install_failure, step_failure

HEADER = "stackbuild: system packages: apt-get exited with 100; apt's and dpkg's reasons:"


def marked(*lines: str) -> list[str]:
    return [HEADER, *(f"stackbuild: | {line}" for line in lines)]


# What apt 2.4/2.6 and dpkg 1.21 print, cut down to the lines install-debs.sh selects.
POSTINST = marked(
    "dpkg: error processing package sbbad (--configure):",
    " installed sbbad package post-installation script subprocess returned error exit status 3",
    "dpkg: dependency problems prevent configuration of sbtop:",
    " sbtop depends on sbbad; however:",
    "dpkg: error processing package sbtop (--configure):",
    " dependency problems - leaving unconfigured",
    "E: Sub-process /usr/bin/dpkg returned an error code (1)",
)


UNPACK = marked(
    "dpkg: error processing archive /tmp/stackbuild-debs/sbclash_1.0_amd64.deb (--unpack):",
    " trying to overwrite '/usr/bin/sbtool', which is also in package sbtool 1.0",
    "E: Sub-process /usr/bin/dpkg returned an error code (1)",
)


UNMET = marked(
    " sbmain : PreDepends: sbpre but it is not installable",
    "E: Unable to correct problems, you have held broken packages.",
)


@pytest.mark.parametrize(
    ("lines", "headline"),
    [
        (
            POSTINST,
            "cannot install system package sbbad: installed sbbad package post-installation script subprocess "
            "returned error exit status 3",
        ),
        (
            UNPACK,
            "cannot install system package sbclash: trying to overwrite '/usr/bin/sbtool', which is also in "
            "package sbtool 1.0",
        ),
        (UNMET, "cannot install system package sbmain: PreDepends: sbpre but it is not installable"),
        (marked("E: Could not open lock file"), "cannot install system packages: Could not open lock file"),
        (
            marked(
                "dpkg: error: failed to write status database record about 'sbpre' to '/var/lib/dpkg/status': "
                "No space left on device",
                "E: Sub-process /usr/bin/dpkg returned an error code (2)",
            ),
            "cannot install system packages: failed to write status database record about 'sbpre' to "
            "'/var/lib/dpkg/status': No space left on device",
        ),
        ([HEADER], "cannot install system packages: apt-get exited with 100"),
        (
            [
                "stackbuild: cannot install system package sbpre: sbpre_1.0_all.deb holds sbpre 2.0, not the locked"
                " sbpre 1.0 (sha256 1234, locked abcd)"
            ],
            "cannot install system package sbpre: sbpre_1.0_all.deb holds sbpre 2.0, not the locked sbpre 1.0 "
            "(sha256 1234, locked abcd)",
        ),
    ],
)
def test_the_headline_names_the_package_and_says_apts_or_dpkgs_reason(lines: list[str], headline: str) -> None:
    noise = ["Setting up sbpre (1.0) ...", "------", ' > [2/2] RUN ["/bin/bash", "/tmp/stackbuild-debs/install.sh"]:']
    # BuildKit repeats a failed step's last lines after it (buildx 0.11+ with a time before each):
    # the reason is read once either way, from the step's lines or from the repeat.
    assert install_failure([*noise, *lines, *noise, *lines[-3:]]) == headline
    assert install_failure([*noise[1:], *(f"0.{i:03d} {line}" for i, line in enumerate(lines))]) == headline


def test_other_failures_keep_the_builders_words() -> None:
    assert install_failure(["make: *** [all] Error 2", "stackbuild: | not after a header"]) is None


# A failed build step as BuildKit shows it (step number and time before each line) and as the classic
# builder does (bare lines): cmake 3.25's words for a missing package, gcc 12's and make's for a compile.
CMAKE = [
    "#10 0.412 -- The C compiler identification is GNU 12.2.0",
    "#10 0.631 CMake Error at CMakeLists.txt:7 (find_package):",
    '#10 0.631   Could not find a package configuration file provided by "ACL" with any of',
    "#10 0.631   the following names:",
    "#10 0.640 -- Configuring incomplete, errors occurred!",
    "#10 0.642 stackbuild: runtime: build step 1/2: env -u CMAKE_PREFIX_PATH cmake -S . -B build failed (exit code 1)",
    '#10 ERROR: process "/bin/bash /opt/stackbuild/steps/runtime/build.sh" did not complete successfully: exit code: 1',
]


COMPILE = [
    "-- Looking for pthread_create in pthreads - not found",
    "gcc -Wno-error=unused -c -o main.o main.c",
    "main.c: In function 'main':",
    "main.c:3:12: error: 'x' undeclared (first use in this function)",
    "make: *** [Makefile:2: main.o] Error 1",
    "stackbuild: app: build step 2/3: make -j2 failed (exit code 2)",
]


@pytest.mark.parametrize(
    ("tail", "headline"),
    [
        (
            CMAKE,
            "build step 1/2: env -u CMAKE_PREFIX_PATH cmake -S . -B build failed (exit code 1): CMake Error at "
            'CMakeLists.txt:7 (find_package): Could not find a package configuration file provided by "ACL" '
            "with any of",
        ),
        (
            COMPILE,
            "build step 2/3: make -j2 failed (exit code 2): main.c:3:12: error: 'x' undeclared "
            "(first use in this function)",
        ),
        (
            ["some output", "stackbuild: app: build step 1/1: ./run.sh failed (exit code 7)"],
            "build step 1/1: ./run.sh failed (exit code 7)",
        ),
        (["make: *** [all] Error 2"], None),
    ],
    ids=["cmake-buildkit", "gcc-classic", "no-cause-said", "not-a-build-step"],
)
def test_a_failed_build_steps_headline_is_the_step_and_its_tools_first_words_of_why(
    tail: list[str], headline: str | None
) -> None:
    assert step_failure(tail) == headline


def test_the_runtime_images_failures_are_explained() -> None:
    closure = diagnose(["libascendcl.so not found (needed by /opt/stack/runtime/build/libascend_runtime.so)"])
    assert closure is not None and "DRIVER_LIBRARIES" in closure
    aicpu = diagnose(["EE507033: E30006: Failed to verify the OPP: 0 files match /x/opp/Ascend/aicpu/Ascend*"])
    assert aicpu is not None and "aicpu_syskernels" in aicpu
