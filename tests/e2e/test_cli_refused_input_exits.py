"""A turn the loop refuses for the caller's input exits 2 (bad input), with the loop's sentence and
no model call: an image for a model without `images: true`."""

from __future__ import annotations

import base64
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_stack import Stack, cli, cli_stack

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with cli_stack("aic-refused-", [{"text": "should not be asked", "repeat": "forever"}]) as running:
        yield running


def test_an_image_for_a_text_only_model_exits_2_and_asks_no_model(stack: Stack) -> None:
    workspace = Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))
    (workspace / "shot.png").write_bytes(PNG)
    before = len(stack.model.chat_requests)
    done = cli(stack.env, "run", "-w", str(workspace), "what is in @shot.png?")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "does not accept images" in done.stderr and "images: true" in done.stderr
    assert len(stack.model.chat_requests) == before


def test_a_session_whose_only_input_was_refused_is_not_listed(stack: Stack) -> None:
    workspace = Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))
    (workspace / "shot.png").write_bytes(PNG)
    assert cli(stack.env, "run", "-w", str(workspace), "what is in @shot.png?").returncode == 2
    listed = cli(stack.env, "sessions", "list", "-w", str(workspace))
    assert listed.returncode == 0, listed.stderr
    assert "(empty)" not in listed.stdout and "@shot.png" not in listed.stdout
    kept = cli(stack.env, "run", "-w", str(workspace), "hello")
    assert kept.returncode == 0
    assert "hello" in cli(stack.env, "sessions", "list", "-w", str(workspace)).stdout


def _session_files(workspace: Path) -> list[str]:
    sessions = workspace / ".ai-coding" / "sessions"
    return sorted(p.name for p in sessions.iterdir()) if sessions.is_dir() else []


def test_a_run_refused_before_the_model_writes_no_session_file(stack: Stack) -> None:
    workspace = Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))
    (workspace / "shot.png").write_bytes(PNG)
    assert cli(stack.env, "run", "-w", str(workspace), "what is in @shot.png?").returncode == 2
    oversized = subprocess.run([sys.executable, "-m", "clients.cli.entry", "run", "-w", str(workspace), "-"],
                               env=stack.env, input="x" * (2 * 1024 * 1024), capture_output=True, text=True,
                               timeout=120, check=False)  # over the 1 MiB prompt limit, on stdin
    assert oversized.returncode == 2 and "at most" in oversized.stderr, oversized.stderr
    assert sorted(p.name for p in workspace.iterdir()) == ["shot.png"]  # not even .ai-coding/
    # The services stopping (they save every open session) writes none either.
    assert cli(stack.env, "down").returncode == 0
    assert _session_files(workspace) == []
    assert cli(stack.env, "run", "-w", str(workspace), "hello").returncode == 0  # starts them again
    written = _session_files(workspace)
    assert len({name.split(".")[0] for name in written}) == 1 and any(n.endswith(".json") for n in written), written
