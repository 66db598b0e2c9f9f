"""`ai-coding config init` and `config path`, run as the real CLI in a subprocess."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from services.kernel.config import USER_CONFIG_TEMPLATE, init_user_config
from services.kernel.errors import ConfigError

REPO = Path(__file__).resolve().parents[3]


def cli(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_CODING_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    return subprocess.run([sys.executable, "-m", "clients.cli.entry", "config", *args], cwd=cwd or REPO, env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def test_init_creates_a_private_file_in_a_private_directory_and_prints_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    result = cli(home, "init")
    target = home / ".config" / "ai-coding" / "config.yaml"
    assert result.returncode == 0, result.stderr
    assert str(target) in result.stdout
    assert "# default_model: main" in result.stdout
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o700
    assert yaml.safe_load(target.read_text()) is None, "the template is all comments: valid and empty"


def test_init_never_overwrites_an_existing_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    target = home / ".config" / "ai-coding" / "config.yaml"
    target.parent.mkdir(parents=True)
    target.write_text("models: {mine: {api_key: keep}}\n")
    result = cli(home, "init")
    assert result.returncode == 2
    assert "already exists; not overwriting it" in result.stderr
    assert "Traceback" not in result.stderr
    assert target.read_text() == "models: {mine: {api_key: keep}}\n"


def test_init_does_not_follow_a_planted_symlink(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    target = tmp_path / "cfg" / "config.yaml"
    target.parent.mkdir()
    target.symlink_to(victim)
    with pytest.raises(ConfigError, match="already exists"):
        init_user_config(target)
    assert victim.read_text() == "precious"


def test_init_writes_the_template_through_the_function(tmp_path: Path) -> None:
    target = init_user_config(tmp_path / "a" / "b" / "config.yaml")
    assert target.read_text() == USER_CONFIG_TEMPLATE


def test_path_prints_the_user_file_and_the_project_files(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    (repo / "ai-coding.local.yaml").write_text("ai: {}\n")
    result = cli(home, "path", "-w", str(repo / "sub"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(str(home / ".config" / "ai-coding" / "config.yaml"))
    assert "not created yet" in lines[0]
    assert lines[1] == f"{repo / 'ai-coding.local.yaml'} (project layer)"


def test_show_prints_values_with_sources_and_warnings(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "ai-coding.yaml").write_text("ai:\n  max_tool_iterations: 4\nhooks:\n  x: 1\n")
    result = cli(home, "show", "-w", str(repo))
    assert result.returncode == 0, result.stderr
    assert f"ai.max_tool_iterations = 4  [project:{repo / 'ai-coding.yaml'}]" in result.stdout
    assert "ai.turn_timeout_seconds = 1800.0  [default]" in result.stdout
    assert "ignored `hooks`" in result.stderr
