"""``run --json`` end to end: every line of a scripted turn validates against the shipped schema,
and a reader that leaves after the first line (``| head -1``) ends the run quietly with exit 0.

The CLI runs as a subprocess against the real supervisor and services; the model is the fake
model server.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from services.fake_model import FakeModelServer
from tests.e2e.test_cli_process_control import _cleanup, cli, write_config

TURN = [
    {"name": "look", "tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}],
     "usage": {"prompt_tokens": 3263, "completion_tokens": 41, "cached_tokens": 3072}},
    # Streamed slowly, so most events come after a reader that takes one line has gone.
    {"name": "answer", "text": "The notes say hello. " * 8, "chunk_chars": 4, "chunk_delay_ms": 5},
]
SCRIPT = TURN * 6


@pytest.fixture
def env(isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    with FakeModelServer(SCRIPT) as model:
        config = tmp_path / "user" / "config.yaml"  # not above the workspace: no project-file warning
        config.parent.mkdir()
        write_config(config, model.url)
        text = config.read_text()
        monkeypatch.setenv("AI_CODING_CONFIG", str(config))
        workspace = tmp_path / "ws"
        workspace.mkdir()
        (workspace / "notes.txt").write_text("hello\n")
        rdir = Path(os.environ["AI_CODING_RUNTIME_DIR"])
        yield {"workspace": workspace, "model": model}
        _cleanup(rdir, config, text)


@pytest.mark.slow
def test_every_line_of_a_scripted_turn_validates_against_the_shipped_schema(env: dict[str, Any]) -> None:
    run = cli("run", "--json", "-w", str(env["workspace"]), "what do the notes say?")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    schema = json.loads(files("clients.cli").joinpath("run_events.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for line in lines:
        errors = [e.message for e in validator.iter_errors(line)]
        assert not errors, (line, errors)
    assert lines[0]["schemaVersion"] == 1 and all("schemaVersion" not in line for line in lines[1:])
    step = next(line["modelStepFinished"] for line in lines if "modelStepFinished" in line)
    assert step["usage"]["promptTokens"] == 3263 and step["usage"]["cachedTokens"] == 3072
    assert isinstance(lines[0]["seq"], int) and lines[-1]["turnFinished"]["status"] == "TURN_STATUS_COMPLETED"


@pytest.mark.slow
def test_run_json_piped_into_head_ends_quietly_with_exit_0_every_time(env: dict[str, Any]) -> None:
    command = (f"{shlex.quote(sys.executable)} -m clients.cli.entry run --json -w "
               f"{shlex.quote(str(env['workspace']))} 'what do the notes say?' | head -1; exit ${{PIPESTATUS[0]}}")
    assert cli("up").returncode == 0
    # A run once hung at exit one time in five: several runs, each bounded by its own timeout.
    for attempt in range(5):
        done = subprocess.run(command, shell=True, executable="/bin/bash", capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL, check=False)
        assert len(done.stdout.splitlines()) == 1, (attempt, done.stdout)
        assert json.loads(done.stdout)["schemaVersion"] == 1
        assert done.stderr == "", (attempt, done.stderr)
        assert done.returncode == 0, (attempt, done.returncode)
    # Each of those turns ran to its end although nobody read its output.
    assert len(env["model"].chat_requests) == 5 * 2
