"""``ai-coding demo``: one real turn through the real services against a scripted model.

Everything it starts is private to the demo: a temp workspace (a copy of the bundled
project with a failing test), the fake model in this process, a temp user config
(``AI_CODING_CONFIG``) and a private runtime dir, so a user's running services are never
touched. It stops what it started, whatever happens.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from clients.cli import exit_codes

if TYPE_CHECKING:
    from rich.console import Console

    from clients.cli.control import Setup

REPLAY_NOTE = """\
That was a scripted replay: a fake model served the same answers a real one would,
but everything else (the loop, the sandboxed tools, memory, the MCP gateway) ran for real."""

CONFIGURED_HINT = """\
Your config already names a model: run  ai-coding  (or  ai-coding run "your request")  in a project."""

REAL_MODEL_HINT = """\
To use a real model, run  ai-coding setup  (it asks for the provider, key and model, and tests them),
or put this in ~/.config/ai-coding/config.yaml:

    default_model: main
    models:
      main:
        provider: openai            # or deepseek, qwen, ollama, generic
        model: gpt-4o-mini
        api_key: ${OPENAI_API_KEY}

then: export OPENAI_API_KEY=...  and run  ai-coding run "your request"  (or just  ai-coding)."""

_MODEL_ENV = ("AI_CODING_MODEL", "AI_CODING_PROVIDER", "AI_CODING_BASE_URL", "AI_CODING_API_KEY",
              "AI_CODING_TRUST_PROJECT")


def closing_hint(configured: bool) -> str:
    """What the demo says last: how to go on from here, for a user with or without a model configured."""
    return f"{REPLAY_NOTE}\n\n{CONFIGURED_HINT if configured else REAL_MODEL_HINT}"


def bwrap_usable() -> bool:
    """True when bubblewrap is installed and can start a sandbox here."""
    if shutil.which("bwrap") is None:
        return False
    probe = subprocess.run(
        ["bwrap", "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "--proc", "/proc", "true"],
        capture_output=True, timeout=10, check=False,
    )
    return probe.returncode == 0


def demo_config(base_url: str, sandbox: bool) -> str:
    """The demo's user config: the scripted model, and the sandbox off only when it cannot run."""
    lines = [
        "default_model: demo",
        "models:",
        "  demo:",
        "    provider: generic",
        "    model: fake-model",
        f"    base_url: {base_url}",
        "    api_key: demo-key",
        # The replay scripts the turn only; the memory harvest's extra model call is not in it.
        "loop:",
        "  harvest: false",
    ]
    if not sandbox:
        lines += ["tools:", "  sandbox:", "    mode: none"]
    return "\n".join(lines) + "\n"


def run_demo(keep: bool = False) -> int:
    """Run the demo; returns the exit code."""
    from rich.console import Console

    from clients.cli import control
    from clients.cli.setup.first_run import needs_setup
    from services.fake_model import FakeModelServer
    from services.fake_model.demo import demo_project_dir, demo_script_path

    console = Console(highlight=False)
    configured = not needs_setup(None)  # before the demo points the environment at its own config
    base = Path(tempfile.mkdtemp(prefix="aic-demo-", dir="/tmp"))
    os.chmod(base, 0o700)
    workspace = base / "project"
    shutil.copytree(demo_project_dir(), workspace)
    sandbox = bwrap_usable()
    server = FakeModelServer(str(demo_script_path())).start()
    saved = {k: os.environ.get(k) for k in (*_MODEL_ENV, "AI_CODING_CONFIG", "AI_CODING_RUNTIME_DIR")}
    setup: Setup | None = None
    try:
        for key in _MODEL_ENV:
            os.environ.pop(key, None)
        config_file = base / "config.yaml"
        config_file.write_text(demo_config(server.url, sandbox), encoding="utf-8")
        os.environ["AI_CODING_CONFIG"] = str(config_file)
        os.environ["AI_CODING_RUNTIME_DIR"] = str(base / "run")
        console.print(f"demo workspace: {workspace} (a small project whose test fails)", soft_wrap=True)
        if not sandbox:
            console.print("[yellow]bubblewrap is missing or cannot start here: the demo runs commands "
                          "without the sandbox (install it: apt-get install bubblewrap)[/yellow]")
        console.print("starting the services ...")
        setup = control.resolve(workspace)
        control.start(setup)
        outcome = _one_turn(setup, workspace, console)
        if server.errors:
            console.print(f"[red]the scripted model saw an unexpected request: {server.errors[0]}[/red]")
            return exit_codes.FAILED
        console.print()
        console.print(closing_hint(configured), markup=False, soft_wrap=True)
        return outcome
    finally:
        if setup is not None:
            control.stop(setup)
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if keep:
            print(f"kept the demo workspace at {workspace}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)


def demo_prompt() -> str:
    """The request the demo sends: the bundled one, else what the script's first step expects."""
    import importlib

    module = importlib.import_module("services.fake_model.demo")
    prompt = getattr(module, "DEMO_PROMPT", "")
    if prompt:
        return str(prompt)
    from services.fake_model.script import load_script_file

    first = load_script_file(module.demo_script_path()).steps[0]
    return " ".join(first.match) or "Fix the failing test."


def _one_turn(setup: Setup, workspace: Path, console: Console) -> int:
    from clients.cli.render import EventRenderer
    from clients.cli.turn import AutoApprover, drive_turn, open_session

    endpoint = setup.endpoints["loop"]
    opened = open_session(endpoint, str(workspace), auto_approve=True)
    prompt = demo_prompt()
    renderer = EventRenderer(console)
    console.print()
    console.print(f"> {prompt}", markup=False, soft_wrap=True)
    try:
        outcome = drive_turn(endpoint, opened.session_id, prompt, renderer.handle, AutoApprover())
    finally:
        renderer.close()
    return outcome.exit_code
