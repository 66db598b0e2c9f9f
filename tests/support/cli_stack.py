"""The services started by the real CLI (`ai-coding up`) for one test module: a throwaway HOME and
runtime dir, a user config naming a fake model, and `ai-coding down` at the end."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from services.fake_model import FakeModelServer


@dataclass
class Stack:
    env: dict[str, str]
    model: FakeModelServer
    base: Path


def cli(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`ai-coding ARGS` in ``env``, without a terminal."""
    return subprocess.run([sys.executable, "-m", "clients.cli.entry", *args], env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False)


@contextlib.contextmanager
def cli_stack(prefix: str, script: list[dict[str, Any]], model_options: str = "",
              extra_config: str = "") -> Iterator[Stack]:
    """Services up for a fake model serving ``script``; ``model_options`` is added to the model
    entry's YAML flow mapping (e.g. ``", max_retries: 0"``), ``extra_config`` (YAML) to the config."""
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    os.chmod(base, 0o700)
    home = base / "home"
    (home / ".config").mkdir(parents=True)
    model = FakeModelServer(script).start()
    config = base / "config.yaml"
    config.write_text("models:\n  default: {provider: generic, model: fake-model, "
                      f"base_url: '{model.url}', api_key: x{model_options}}}\nloop: {{harvest: false}}\n{extra_config}")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("AI_CODING_", "OPENAI_", "DEEPSEEK_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local/share"),
               AI_CODING_RUNTIME_DIR=str(base / "run"), AI_CODING_CONFIG=str(config),
               PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color", COLUMNS="120", LINES="40")
    up = cli(env, "up")
    if up.returncode != 0:
        model.stop()
        pytest.fail(f"ai-coding up failed: {up.stdout}\n{up.stderr}")
    try:
        yield Stack(env, model, base)
    finally:
        cli(env, "down", timeout=60)
        model.stop()
        shutil.rmtree(base, ignore_errors=True)
