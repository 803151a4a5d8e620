"""Files named by coalmine.yaml stay inside the project and exist; endpoints are http(s) URLs.

Both are checked when the config loads, at the line of the setting, for every provider that
has such a setting (and the inline judge), so nothing fails only once a run has started.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from coalmine._util.locations import OutsideProject, check_http_url, inside_root
from coalmine.config import load_config
from coalmine.errors import ConfigError
from coalmine.providers.base import provider_settings
from tests.helpers.cli import run_main
from tests.helpers.project import Project


def config_error(root: Path, text: str) -> ConfigError:
    (root / "coalmine.yaml").write_text(textwrap.dedent(text), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(root, providers=provider_settings(), environ={})
    return caught.value


# -- inside_root ------------------------------------------------------------------------------


def test_inside_root_follows_symlinks_and_refuses_what_leaves(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "prompts").mkdir(parents=True)
    (root / "prompts" / "a.md").write_text("hi")
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    (root / "prompts" / "link.md").symlink_to(outside)
    assert inside_root("prompts/a.md", base=root, root=root) == (root / "prompts/a.md").resolve()
    for name in ("../secret.txt", str(outside), "prompts/link.md", "prompts/../../secret.txt"):
        with pytest.raises(OutsideProject, match="outside the project"):
            inside_root(name, base=root, root=root)


@pytest.mark.parametrize(
    "url", ["not a url", "ftp://host/x", "http://", "file:///etc/passwd", "http://h:99999/"]
)
def test_check_http_url_refuses(url: str) -> None:
    with pytest.raises(ValueError, match="URL"):
        check_http_url(url)


def test_check_http_url_keeps_real_endpoints() -> None:
    for url in ("http://127.0.0.1:8000/v1", "https://api.openai.com/v1", "http://[::1]:80/"):
        assert check_http_url(url) == url


# -- at load, at the setting's line -----------------------------------------------------------


def test_a_missing_cassette_is_an_error_at_its_line(tmp_path: Path) -> None:
    error = config_error(
        tmp_path, "agents:\n  R:\n    provider: replay\n    cassette: gone.jsonl\n"
    )
    assert error.line == 4
    assert "cassette" in error.reason and "no file at" in error.reason


@pytest.mark.parametrize(
    ("provider", "key"),
    [("openai", "base_url"), ("anthropic", "base_url"), ("http", "url")],
)
def test_a_bad_url_is_an_error_at_its_line(tmp_path: Path, provider: str, key: str) -> None:
    model = "" if provider == "http" else "    model: m\n"
    error = config_error(
        tmp_path, f"agents:\n  A:\n    provider: {provider}\n{model}    {key}: 'not a url'\n"
    )
    assert error.line == (5 if model else 4)
    assert "not a url" in error.reason and "http" in error.reason


def test_the_inline_judge_url_is_checked_too(tmp_path: Path) -> None:
    error = config_error(tmp_path, "judge:\n  provider: openai\n  model: m\n  base_url: x\n")
    assert error.line == 4


@pytest.mark.parametrize("key", ["system_prompt_file", "agent_file"])
def test_a_prompt_file_outside_the_project_is_refused(tmp_path: Path, key: str) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    error = config_error(
        root,
        f"agents:\n  A:\n    provider: openai\n    model: m\n    {key}: ../../../../etc/passwd\n",
    )
    assert error.line == 5
    assert "outside the project" in error.reason


def test_an_absolute_path_or_symlink_out_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    secret = tmp_path / "secret.md"
    secret.write_text("the admin password is hunter2")
    os.symlink(secret, root / "prompt.md")
    for value in (str(secret), "prompt.md"):
        error = config_error(
            root,
            f"agents:\n  A:\n    provider: openai\n    model: m\n    system_prompt_file: {value}\n",
        )
        assert "outside the project" in error.reason, value


def test_a_python_agent_file_outside_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (tmp_path / "evil.py").write_text("def call_api(p, o, c):\n    return {'output': 'x'}\n")
    error = config_error(
        root,
        "agents:\n  A:\n    provider: python\n    convention: promptfoo\n    file: ../evil.py\n",
    )
    assert error.line == 5 and "outside the project" in error.reason


def test_the_run_never_reads_the_file(project: Project, tmp_path: Path) -> None:
    secret = tmp_path / "passwd"
    secret.write_text("root:x:0:0")
    project.config(
        {"agents": {"QA Coordinator": {"provider": "openai", "model": "m",
                                       "base_url": "http://127.0.0.1:9/v1",
                                       "system_prompt_file": str(secret)}}}
    )  # fmt: skip
    project.canary("qa-001-x")
    code, output = run_main("canary", "run", "--root", str(project.root), "--display", "none")
    assert code == 2, output
    assert "coalmine.yaml:" in output and "outside the project" in output
    assert "Traceback" not in output
    assert not (project.root / ".coalmine").exists()  # nothing started, nothing stored


# -- promptfoo configs: what a file:// names stays inside the project -------------------------


def promptfoo_project(tmp_path: Path, var: str, tests: str = "") -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("TOP-SECRET-42")
    (root / "promptfooconfig.yaml").write_text(
        "prompts: ['say {{q}}']\nproviders: [echo]\n"
        + (tests or f"tests:\n  - vars: {{q: '{var}'}}\n  - vars: {{q: fine}}\n"),
        encoding="utf-8",
    )
    return root


def test_a_promptfoo_var_file_outside_is_not_read_or_sent(tmp_path: Path) -> None:
    root = promptfoo_project(tmp_path, "file://../secret.txt")
    code, output = run_main(
        "eval", "run", "--promptfoo", str(root / "promptfooconfig.yaml"), "--root", str(root),
        "--format", "json", "--display", "none",
    )  # fmt: skip
    assert code == 1, output
    assert "TOP-SECRET-42" not in output
    assert "outside the project" in output
    assert '"say fine"' in output  # the other row ran


def test_an_imported_promptfoo_tests_file_outside_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tests.yaml").write_text("- vars: {q: leaked}\n")
    root = promptfoo_project(tmp_path, "", tests="tests: file://../tests.yaml\n")
    code, output = run_main(
        "import", "promptfoo", str(root / "promptfooconfig.yaml"), "--out", str(root)
    )
    assert code == 2, output
    assert "promptfooconfig.yaml:3" in output and "outside the project" in output
    assert "Traceback" not in output
    assert not (root / "harness").exists()


def test_a_promptfoo_config_reads_the_files_of_its_git_repository(tmp_path: Path) -> None:
    # a team keeps its config in evals/ and names shared files with ../ paths; the repository
    # is what they trust, so its files are read, and nothing outside it
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "shared").mkdir()
    (repo / "shared" / "context.txt").write_text("from the shared folder")
    (tmp_path / "secret.txt").write_text("TOP-SECRET-42")
    evals = repo / "evals"
    evals.mkdir()
    (evals / "promptfooconfig.yaml").write_text(
        "prompts: ['say {{q}}']\nproviders: [echo]\ntests:\n"
        "  - vars: {q: 'file://../shared/context.txt'}\n"
        "  - vars: {q: 'file://../../secret.txt'}\n",
        encoding="utf-8",
    )
    code, output = run_main(
        "eval", "run", "--promptfoo", str(evals / "promptfooconfig.yaml"), "--root", str(evals),
        "--format", "json", "--display", "none",
    )  # fmt: skip
    assert code == 1, output
    assert '"say from the shared folder"' in output
    assert "TOP-SECRET-42" not in output
    assert "outside the project" in output
