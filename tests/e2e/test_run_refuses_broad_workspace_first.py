"""`ai-coding run` in a workspace the services would refuse says so before starting anything."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_stack import cli


@pytest.fixture
def env() -> Iterator[dict[str, str]]:
    base = Path(tempfile.mkdtemp(prefix="aic-broad-", dir="/tmp"))
    home = base / "users" / "me"
    (home / ".config").mkdir(parents=True)
    config = base / "config.yaml"
    config.write_text("models:\n  default: {provider: generic, model: m, base_url: 'http://127.0.0.1:9', api_key: x}\n")
    out = {k: v for k, v in os.environ.items() if not k.startswith(("AI_CODING_", "OPENAI_", "DEEPSEEK_"))}
    out.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local/share"),
               AI_CODING_RUNTIME_DIR=str(base / "run"), AI_CODING_CONFIG=str(config))
    try:
        yield out
    finally:
        cli(out, "down", timeout=60)  # whatever a failing run started
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("which", ["home", "above home", "filesystem root"])
def test_a_too_broad_workspace_is_refused_and_no_service_starts(env: dict[str, str], which: str) -> None:
    home = Path(env["HOME"])
    workspace = {"home": home, "above home": home.parent, "filesystem root": Path("/")}[which]
    done = cli(env, "run", "-w", str(workspace), "hello", timeout=60)
    assert done.returncode != 0
    assert "too broad" in done.stderr and "project directory" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    rdir = Path(env["AI_CODING_RUNTIME_DIR"])
    started = sorted(p.name for p in rdir.iterdir()) if rdir.exists() else []
    assert not [name for name in started if name.endswith((".sock", ".pid")) or name == "state.json"], started
