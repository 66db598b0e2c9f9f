"""Every fenced command block of README.md and docs/*.md runs as written, against the fake model, in
a throwaway HOME and workspace, or says in the file (the comment line above it) why it is not run
here. A doc that shows a command that fails is a bug like any other."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from services.fake_model import FakeModelServer

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMAND_LANGS = ("bash", "sh", "shell", "console", "")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
NOT_RUN = re.compile(r"<!-- not run by tests: (.+?) -->\s*$")


@dataclass(frozen=True)
class Block:
    where: str
    body: str
    skipped_because: str


def command_blocks() -> list[Block]:
    blocks = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            if match.group(1) not in COMMAND_LANGS:
                continue
            line = text[: match.start()].count("\n") + 1
            above = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marked = NOT_RUN.search(above)
            blocks.append(Block(f"{path.relative_to(ROOT)}:{line}", match.group(2),
                                marked.group(1).strip() if marked else ""))
    return blocks


BLOCKS = command_blocks()
RUNNABLE = [b for b in BLOCKS if not b.skipped_because]


def test_every_command_block_is_run_or_says_why_not() -> None:
    assert RUNNABLE, "no runnable command block found: the parser is broken"
    for block in BLOCKS:
        if block.skipped_because:
            assert len(block.skipped_because) > 15, f"{block.where}: say why it is not run"


@pytest.fixture(scope="module")
def machine() -> Iterator[dict[str, str]]:
    base = Path(tempfile.mkdtemp(prefix="aic-docs-", dir="/tmp"))
    os.chmod(base, 0o700)
    home = base / "home"
    (home / ".config" / "ai-coding").mkdir(parents=True, mode=0o700)
    (home / "src" / "app").mkdir(parents=True)
    model = FakeModelServer([{"text": "Done as asked.", "repeat": "forever"}]).start()
    config = home / ".config" / "ai-coding" / "config.yaml"
    config.write_text(f"models:\n  main: {{provider: generic, model: fake-model, base_url: '{model.url}', "
                      "api_key: x}\nloop: {harvest: false}\n")
    workspace = base / "project"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "auth.py").write_text("def login(user):\n    return user is not None\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AI_CODING_", "OPENAI_", "DEEPSEEK_", "XDG_"))}
    env.update(HOME=str(home), AI_CODING_RUNTIME_DIR=str(base / "run"), COLUMNS="200",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.org", WORKSPACE=str(workspace))
    git = ["git", "-C", str(workspace)]
    subprocess.run([*git, "init", "-q"], check=True, env=env)
    subprocess.run([*git, "add", "-A"], check=True, env=env)
    subprocess.run([*git, "commit", "-qm", "start"], check=True, env=env)
    (workspace / "src" / "auth.py").write_text("def login(user):\n    return bool(user)\n")  # for `git diff`
    try:
        yield env
    finally:
        subprocess.run([sys.executable, "-m", "clients.cli.entry", "down"], env=env, capture_output=True,
                       timeout=60, check=False)
        model.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.where for b in RUNNABLE])
def test_a_documented_command_block_runs_as_written(block: Block, machine: dict[str, str]) -> None:
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.body], cwd=machine["WORKSPACE"],
                          env=machine, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                          check=False)
    assert done.returncode == 0, f"{block.where} failed ({done.returncode}):\n{block.body}\n" \
                                 f"stdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-2000:]}"
