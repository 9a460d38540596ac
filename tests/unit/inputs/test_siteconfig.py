from pathlib import Path

import pytest

from builder.cli.configuration import resolve
from builder.inputs import site as siteconfig
from builder.model.errors import StackbuildError
from tests.conftest import ROOT
from tests.helpers import run_cli


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "site.yaml"
    path.write_text(text)
    return path


def test_rewrites_take_the_longest_prefix(tmp_path: Path) -> None:
    site = siteconfig.load(
        write(
            tmp_path,
            """
url_rewrites:
  - {from: "https://github.com/", to: "https://mirror.internal/gh/"}
  - {from: "https://github.com/hicann/", to: "https://mirror.internal/hicann/"}
repos:
  ascend-c: https://github.com/team/ascend-c.git
""",
        )
    )
    assert site.rewrite("https://github.com/tile-ai/tilelang.git") == "https://mirror.internal/gh/tile-ai/tilelang.git"
    assert site.rewrite("https://github.com/hicann/catlass.git") == "https://mirror.internal/hicann/catlass.git"
    assert site.rewrite("https://other.example/x") == "https://other.example/x"
    assert site.repo_url("site:ascend-c") == "https://mirror.internal/gh/team/ascend-c.git"


def test_missing_site_repo_names_the_fix(tmp_path: Path) -> None:
    site = siteconfig.load(write(tmp_path, "repos: {}\n"))
    with pytest.raises(StackbuildError, match=r"needs repos\.runtime in the site configuration .*site\.yaml"):
        site.repo_url("site:runtime")


@pytest.mark.parametrize(
    "text",
    [
        "cache_registry: r.internal:5000/cache\nregistry_password: hunter2\n",
        "repos:\n  ascend-c: https://user:hunter2@git.internal/ascend-c.git\n",
        "headers:\n  mirror.internal: {Authorization: Bearer hunter2}\n",
        "headers:\n  mirror.internal: {X-Auth-Token: hunter2}\n",
        "headers:\n  mirror.internal: {X-Api-Key: hunter2}\n",
    ],
)
def test_credentials_are_refused_without_echoing_them(tmp_path: Path, text: str) -> None:
    with pytest.raises(StackbuildError) as info:
        siteconfig.load(write(tmp_path, text))
    assert "credentials do not go in the site configuration" in str(info.value)
    assert "hunter2" not in str(info.value)


def test_search_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Which site configuration is read: --site-config, else $STACKBUILD_SITE_CONFIG, else the project's,
    else the user's (the settings' cascade, builder.cli.configuration)."""
    monkeypatch.chdir(tmp_path)
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def read(given: Path | None = None) -> str | None:
        return siteconfig.load(resolve(env, tmp_path, given).site_config).cache_registry

    assert siteconfig.load(resolve(env, tmp_path).site_config) == siteconfig.SiteConfig()
    user = tmp_path / "config" / "stackbuild" / "site.yaml"
    user.parent.mkdir(parents=True)
    user.write_text("cache_registry: user.internal/cache\n")
    assert read() == "user.internal/cache"
    (tmp_path / "stackbuild.site.yaml").write_text("cache_registry: repo.internal/cache\n")
    assert read() == "repo.internal/cache"
    env["STACKBUILD_SITE_CONFIG"] = str(write(tmp_path, "cache_registry: env.internal/cache\n"))
    assert read() == "env.internal/cache"
    given = tmp_path / "given.yaml"
    given.write_text("cache_registry: cli.internal/cache\n")
    assert read(given) == "cli.internal/cache"


def test_unknown_key_is_reported(tmp_path: Path) -> None:
    with pytest.raises(StackbuildError, match=r"site\.yaml: url_rewrite: Extra inputs are not permitted"):
        siteconfig.load(write(tmp_path, "url_rewrite: []\n"))


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("headers:\n  https://mirror.internal/: {X-Team: npu}\n", "is not a host name"),
        ("headers:\n  mirror.internal: {'X Team': npu}\n", "is not an HTTP header name"),
        ('headers:\n  mirror.internal: {"X-Team\\n": npu}\n', "is not an HTTP header name"),
        ("headers:\n  mirror.internal: {X-Team: ' npu'}\n", "no leading or trailing blanks"),
        ('headers:\n  mirror.internal: {X-Team: "a\\r\\nHost: evil"}\n', "mirror.internal: X-Team: contains a control"),
    ],
)
def test_a_header_http_cannot_carry_is_refused_naming_it(tmp_path: Path, text: str, said: str) -> None:
    with pytest.raises(StackbuildError) as info:
        siteconfig.load(write(tmp_path, text))
    assert "headers" in str(info.value) and said in str(info.value), info.value


def test_headers_are_per_host(tmp_path: Path) -> None:
    site = siteconfig.load(write(tmp_path, "headers:\n  mirror.internal:8080: {X-Team: npu}\n"))
    assert site.headers == {"mirror.internal:8080": {"X-Team": "npu"}}


def test_site_config_secrets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = tmp_path / "site.yaml"
    site.write_text("repos:\n  ascend-c: https://ghp_TOKEN@git.internal/a.git\n")
    code, _, err = run_cli(capsys, "--site-config", str(site), "render", "reference")
    assert code == 2 and "credentials do not go in the site configuration" in err and "ghp_TOKEN" not in err
    site.write_text("url_rewrites:\n  - {from: 'https://a/', to: 'https://b/?private_token=XYZ'}\n")
    code, _, err = run_cli(capsys, "--site-config", str(site), "render", "reference")
    assert code == 2 and "XYZ" not in err
    site.write_text(
        "repos:\n  oauth-tools: https://git.internal/oauth-tools.git\n  auth: https://git.internal/auth.git\n"
    )
    assert (
        run_cli(
            capsys, "--root", str(ROOT), "--site-config", str(site), "render", "reference", "-o", str(tmp_path / "r")
        )[0]
        == 0
    )


def test_missing_site_config_named_in_the_environment_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STACKBUILD_SITE_CONFIG", str(tmp_path / "nope.yaml"))
    code, _, err = run_cli(capsys, "--root", str(ROOT), "render", "reference")
    assert code == 2 and "nope.yaml, which is not a file" in err
