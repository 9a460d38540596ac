"""Every place in builder/ that starts a program, and what keeps a value from a manifest, lock,
bundle, mirror or repository from becoming one of its options. A new call site fails this test
until it is added here with what it fences (tests/unit/execute/test_bundle_import.py,
tests/unit/inputs/test_tag_refs.py and tests/unit/inputs/test_untrusted_submodules.py prove the fences)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

# Calls that start a program, directly or through the one wrapper each tool has.
LAUNCHERS = {
    "subprocess.run",
    "subprocess.Popen",
    "subprocess.check_output",
    "subprocess.call",
    "os.system",
    "os.execv",
    "os.execvp",
    "git",  # builder.inputs.git.git, inside that module
    "git.git",  # the same, elsewhere
    "_git",  # inputs/project.py: the checkout's own origin and HEAD
    "apt.run",  # inputs/debs.py PrivateApt: the host's apt in a private root
    "apt.cache",
    "self._run",
    "_run",  # engine/buildkit.py: the docker CLI's version (cli/__init__.py's _run runs a command function)
    "pip",  # inputs/wheels.py
}

FENCED: dict[tuple[str, str], str] = {
    ("builder/cli/__init__.py", "main"): "not a program: _run there calls the chosen command's function",
    ("builder/engine/buildkit.py", "_run"): "a fixed argv: the docker CLI's --version / buildx version",
    ("builder/engine/buildkit.py", "find_cli"): "through _run: the candidate CLI's path, --version",
    (
        "builder/engine/buildkit.py",
        "build",
    ): "docker build: labels and build args as --label K=V values, context on stdin",
    ("builder/engine/docker_launch.py", "launch"): "docker run: image and command after the options (argv, no shell)",
    ("builder/execute/bundle.py", "_copy_commit"): "commit checked 40 hex; tags from for-each-ref, refs/tags/ names "
    "checked; fetch with -- before the URL",
    ("builder/execute/bundle.py", "_git_store"): "init -- PATH (a path the bundle model allows: git/<hex>.git)",
    ("builder/hostsetup.py", "apt_install"): "package names are constants of the setup step",
    ("builder/hostsetup.py", "ensure_docker"): "dockerd with fixed options",
    ("builder/hostsetup.py", "ensure_foreign"): "architecture names from the Arch enum",
    (
        "builder/inputs/bootstrap.py",
        "_bootstrap",
    ): "mmdebstrap: suite/variant/packages validated by the manifest model, -- before the suite (see _command)",
    ("builder/inputs/bootstrap.py", "emulated"): "arch-test with the Arch enum's Debian name",
    ("builder/inputs/contexts.py", "_checkout"): "submodule absorbgitdirs: no value",
    ("builder/inputs/signed.py", "_check_cms"): "openssl cms -verify with ascend-deployer's fixed options; "
    "the paths are this process's scratch files and the trusted roots",
    ("builder/inputs/debs.py", "_run"): "apt options as -oKey=value; packages after -- (closure, update)",
    ("builder/inputs/debs.py", "run"): "PrivateApt.run: apt-get through _run",
    ("builder/inputs/debs.py", "cache"): "PrivateApt.cache: apt-cache through _run",
    ("builder/inputs/debs.py", "closure"): "install -s / --print-uris / show with -- before the packages",
    ("builder/inputs/debs.py", "resolve"): "update: no value",
    ("builder/inputs/git.py", "_existing_refs"): "ls-remote --symref -- URL",
    ("builder/inputs/git.py", "_checked_store"): "config of a fixed key; fsck with -c fsck.ID=ignore, each ID "
    "matching FSCK_MESSAGE (letters only)",
    ("builder/inputs/git.py", "has_commit"): "cat-file -e COMMIT^{commit}, commit checked 40 hex",
    ("builder/inputs/git.py", "_tags_at"): "ls-remote --tags -- URL",
    ("builder/inputs/git.py", "add_commit_tree"): "archive --prefix=P -o OUT COMMIT, commit checked 40 hex",
    ("builder/inputs/git.py", "git"): "the wrapper: SAFE_CONFIG first, argv (no shell)",
    ("builder/inputs/git.py", "fetchable"): "init -- PATH; fetch -- URL COMMIT (checked 40 hex); ls-remote -- URL HEAD",
    ("builder/inputs/git.py", "gitmodules"): "show COMMIT:.gitmodules (checked 40 hex)",
    ("builder/inputs/git.py", "parse_gitmodules"): "config --no-includes --file - (the text on stdin)",
    ("builder/inputs/git.py", "mirror"): "init -- PATH; fetch -- URL COMMIT +refs/tags/X:refs/tags/X (checked), "
    "with -c fetch.fsck.ID=ignore for each ID matching FSCK_MESSAGE",
    ("builder/inputs/git.py", "resolve_ref"): "ls-remote -- URL REF...",
    ("builder/inputs/git.py", "shallow_checkout"): "init --; fetch -- URL COMMIT; checkout COMMIT --; update-ref -- "
    "refs/tags/X (never `git tag X`); remote add origin -- URL",
    ("builder/inputs/git.py", "skip_submodules"): "config -- submodule.NAME.update none",
    ("builder/inputs/git.py", "tag_refs"): "for-each-ref refs/tags: no value",
    ("builder/inputs/git.py", "tags_pointing_at"): "for-each-ref --points-at=COMMIT (checked by its callers)",
    ("builder/inputs/packages.py", "generate"): "the manifest's generate command, run by design (a reviewed shell "
    "line, {output_dir} shell-quoted)",
    ("builder/inputs/project.py", "_git"): "remote get-url origin / rev-parse HEAD: no value",
    ("builder/inputs/project.py", "origin_of"): "through _git: no value",
    ("builder/inputs/project.py", "toplevel"): "through _git: rev-parse --show-toplevel, no value",
    ("builder/inputs/project.py", "clone_checkout"): (
        "rev-parse --verify --end-of-options REV^{commit} (REV shaped by revision_option); clone -- PATH PATH; "
        "remote set-url origin file://PATH; checkout --detach <40 hex, checked>; status --porcelain"
    ),
    ("builder/inputs/project.py", "_copy_working_tree"): "ls-files -z --cached --others --exclude-standard: no value",
    ("builder/inputs/submodules.py", "gitlinks"): "ls-tree -r -z COMMIT (the parent's gitlink or a checked commit)",
    ("builder/inputs/trees.py", "_listed_files"): "ls-files ... -- .",
    ("builder/inputs/wheels.py", "pip"): "the wrapper: --isolated, argv",
    ("builder/inputs/wheels.py", "resolve"): "download ... -- REQUIREMENTS (validated requirement lines)",
    ("builder/inputs/wheels.py", "_fetch_from"): "download -r FILE: pinned names and hashes in a file, not argv; "
    "the index a shape-checked PythonIndex, joined to its --index-url=/--find-links= option",
    ("builder/verify/probe_runner.py", "command"): "the manifest's probe command, run by design inside the image",
    ("builder/verify/probe_runner.py", "environment_of"): "the toolkit's set_env.sh path from the layout table",
    ("builder/verify/probe_runner.py", "linked_from"): "ldd -- FILE",
    ("builder/verify/probe_runner.py", "ldd_missing"): "ldd -- FILE... (ELF files found under the probe's roots)",
    ("builder/verify/probe_runner.py", "imports"): "python3 -c 'import MODULE' (names checked against MODULE_PATTERN)",
}


def call_sites(root: Path = ROOT) -> set[tuple[str, str]]:
    """(file, function) of every call of a launcher in root/builder."""
    found = set()
    for path in sorted((root / "builder").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Call) and ast.unparse(node.func) in LAUNCHERS:
                    found.add((path.relative_to(root).as_posix(), function.name))
    return found


def test_every_call_site_that_starts_a_program_says_what_it_fences() -> None:
    found = call_sites()
    unlisted = {site for site in found if site not in FENCED}
    assert not unlisted, f"call sites that start a program without a line in FENCED: {sorted(unlisted)}"
    gone = set(FENCED) - found
    assert not gone, f"FENCED lists call sites that no longer start a program: {sorted(gone)}"


def test_the_scan_finds_a_new_call_site_in_any_module(tmp_path: Path) -> None:
    module = tmp_path / "builder" / "inputs" / "sneaky.py"
    module.parent.mkdir(parents=True)
    module.write_text("import subprocess\n\n\ndef tag(name):\n    subprocess.run(['git', 'tag', name])\n")
    (tmp_path / "builder" / "quiet.py").write_text("def nothing():\n    return print('no program')\n")
    assert call_sites(tmp_path) == {("builder/inputs/sneaky.py", "tag")}
