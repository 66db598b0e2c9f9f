"""A newcomer's first run on an empty HOME: the setup questions (a wrong key answered with the
endpoint's precise 401 and a second try), a config that works, then a real turn in the REPL; the
same config without questions (`config init --provider`), and `doctor` saying what to fix."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from services.fake_model import FakeModelServer
from tests.support.cli_stack import cli
from tests.support.tmux import Tmux

RIGHT_KEY = "sk-right-4242"
SCRIPT = {"order": "first_match", "models": ["fake-model", "fake-coder"], "steps": [
    {"match": "single word OK", "text": "OK", "repeat": "forever"},
    {"match": "hello there", "text": "Hello from the configured model.", "repeat": "forever"},
    {"text": "(nothing scripted for this)", "repeat": "forever"},
]}

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is installed by scripts/setup_tests.sh")


@dataclass
class Machine:
    """An empty HOME and runtime dir, and a fake model that wants ``RIGHT_KEY``."""

    base: Path
    home: Path
    env: dict[str, str]
    model: FakeModelServer

    @property
    def config(self) -> Path:
        return self.home / ".config" / "ai-coding" / "config.yaml"


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def machine() -> Iterator[Machine]:
    base = Path(tempfile.mkdtemp(prefix="aic-first-", dir="/tmp"))
    os.chmod(base, 0o700)
    home = base / "home"
    home.mkdir()
    model = FakeModelServer(SCRIPT, api_key=RIGHT_KEY).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AI_CODING_", "OPENAI_", "DEEPSEEK_",
                                                                        "DASHSCOPE_", "XDG_", "OLLAMA_"))}
    env.update(HOME=str(home), AI_CODING_RUNTIME_DIR=str(base / "run"), PROMPT_TOOLKIT_NO_CPR="1",
               TERM="xterm-256color", COLUMNS="120", LINES="40",
               OLLAMA_HOST=f"127.0.0.1:{_closed_port()}")  # no local Ollama to offer
    try:
        yield Machine(base, home, env, model)
    finally:
        cli(env, "down", timeout=60)
        model.stop()
        shutil.rmtree(base, ignore_errors=True)


def _workspace(machine: Machine) -> Path:
    ws = machine.base / "project"
    ws.mkdir(exist_ok=True)
    return ws


@needs_tmux
def test_the_first_run_asks_retries_a_refused_key_and_then_runs_a_turn(machine: Machine) -> None:
    ws = _workspace(machine)
    term = Tmux(machine.base / "tmux.sock", machine.env, [sys.executable, "-m", "clients.cli.entry"], ws)
    try:
        screen = term.wait_for("Provider [1-5]:")
        for label in ("OpenAI", "DeepSeek", "Qwen", "Ollama", "Any OpenAI-compatible URL"):
            assert label in screen
        term.line("5")
        term.wait_for("Base URL of the endpoint")
        term.line(machine.model.url)
        term.wait_for("API key (hidden")
        term.line("sk-wrong-1111")
        screen = term.wait_for("Model [fake-model]:")
        assert "2) fake-coder" in screen  # offered from GET /models
        term.line("")
        screen = term.wait_for("error: the endpoint refused the key (HTTP 401: Incorrect API key provided.)")
        assert "type the key again (2 tries left" in screen
        term.wait_for("API key (hidden", after=1)
        term.line(RIGHT_KEY)
        term.wait_for("ok: the model answered")
        screen = term.wait_for("/help for commands", timeout=90)
        assert "sk-wrong-1111" not in screen and RIGHT_KEY not in screen  # read without echo
        term.line("hello there")
        term.wait_for("Hello from the configured model.", timeout=60)
    finally:
        term.close()
    assert stat.S_IMODE(machine.config.stat().st_mode) == 0o600
    assert stat.S_IMODE(machine.config.parent.stat().st_mode) == 0o700
    written = yaml.safe_load(machine.config.read_text())
    assert written["models"]["main"] == {"provider": "generic", "model": "fake-model",
                                         "base_url": machine.model.url, "api_key": RIGHT_KEY}
    assert any(r.body and "hello there" in str(r.body) for r in machine.model.chat_requests)


@needs_tmux
def test_a_local_ollama_that_answers_is_offered_first(machine: Machine) -> None:
    ws = _workspace(machine)
    with FakeModelServer({"models": ["llama3.2"], "steps": [{"text": "OK", "repeat": "forever"}]}) as ollama:
        machine.env["OLLAMA_HOST"] = f"127.0.0.1:{ollama.port}"
        term = Tmux(machine.base / "tmux.sock", machine.env, [sys.executable, "-m", "clients.cli.entry", "setup"], ws)
        try:
            term.wait_for(f"A local Ollama answers at http://127.0.0.1:{ollama.port}/v1 (1 model(s)). Use it?")
            term.line("")
            term.wait_for("Model [llama3.2]:")
            term.line("")
            term.wait_for("[exit 0]")
        finally:
            term.close()
    entry = yaml.safe_load(machine.config.read_text())["models"]["main"]
    assert entry == {"provider": "ollama", "model": "llama3.2", "base_url": f"http://127.0.0.1:{ollama.port}/v1"}


def test_config_init_with_a_provider_tests_the_key_and_writes_a_config_that_runs(machine: Machine) -> None:
    ws = _workspace(machine)
    args = ("config", "init", "--provider", "generic", "--model", "fake-model", "--base-url", machine.model.url,
            "--api-key-env", "MY_MODEL_KEY")
    unset = cli(machine.env, *args)
    assert unset.returncode == 2
    assert "MY_MODEL_KEY is not set, so the key cannot be tested" in unset.stderr
    wrong = cli({**machine.env, "MY_MODEL_KEY": "sk-wrong"}, *args)
    assert wrong.returncode == 2
    assert "the endpoint refused the key (HTTP 401: Incorrect API key provided.); nothing was written" in wrong.stderr
    assert not machine.config.exists()
    env = {**machine.env, "MY_MODEL_KEY": RIGHT_KEY}
    done = cli(env, *args)
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(machine.config.read_text())["models"]["main"]["api_key"] == "${MY_MODEL_KEY}"
    again = cli(env, *args)
    assert again.returncode == 2 and "already configures model(s) main" in again.stderr
    run = cli(env, "run", "-w", str(ws), "hello there")
    assert run.returncode == 0, run.stderr
    assert "Hello from the configured model." in run.stdout


def test_doctor_names_a_missing_bubblewrap_and_a_0755_runtime_dir_with_their_fixes(machine: Machine) -> None:
    ws = _workspace(machine)
    env = {**machine.env, "MY_MODEL_KEY": RIGHT_KEY}
    bare = cli(env, "doctor", "-w", str(ws))
    assert bare.returncode == 1
    assert "fix: run `ai-coding setup`" in bare.stdout
    init = cli(env, "config", "init", "--provider", "generic", "--model", "fake-model", "--base-url",
               machine.model.url, "--api-key-env", "MY_MODEL_KEY")
    assert init.returncode == 0, init.stderr
    good = cli(env, "doctor", "-w", str(ws))
    assert good.returncode == 0, good.stdout
    assert "a test request to fake-model succeeded" in good.stdout
    assert "everything a run needs is in place" in good.stdout

    refused = cli({**env, "MY_MODEL_KEY": "sk-wrong"}, "doctor", "-w", str(ws))
    assert refused.returncode == 1
    assert "the endpoint refused the key (HTTP 401" in refused.stdout

    no_bwrap = machine.base / "bin"
    no_bwrap.mkdir()
    rdir = Path(env["AI_CODING_RUNTIME_DIR"])
    rdir.mkdir(mode=0o755)
    os.chmod(rdir, 0o755)
    broken = cli({**env, "PATH": str(no_bwrap)}, "doctor", "-w", str(ws))
    assert broken.returncode == 1
    lines = broken.stdout.splitlines()
    sandbox = next(n for n, line in enumerate(lines) if line.startswith("FAIL  sandbox"))
    assert "bubblewrap (bwrap) is not installed or not on PATH" in lines[sandbox]
    assert "apt-get install bubblewrap" in lines[sandbox + 1]
    runtime = next(n for n, line in enumerate(lines) if line.startswith("FAIL  runtime dir"))
    assert "has mode 0755" in lines[runtime]
    assert f"fix: chmod 700 {rdir}" in lines[runtime + 1]
    assert "2 problem(s) to fix" in broken.stdout
