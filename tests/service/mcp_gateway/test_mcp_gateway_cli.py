"""`ai-coding mcp ...` against a real gateway process."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from clients.cli.commands.mcp import app

from .conftest import DEMO, demo_server

AI_CODING = str(Path(sys.executable).parent / "ai-coding")
NOISY = "import sys; print('set NOISY_TOKEN first', file=sys.stderr); sys.exit(3)"


def _up() -> None:
    done = subprocess.run([AI_CODING, "up"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def _down() -> None:
    subprocess.run([AI_CODING, "down"], capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def served(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The services (gateway included) with one good and one broken MCP server; yields the user config path.

    Started with ``ai-coding up``: the mcp commands start the services themselves when none run,
    so a lone gateway process would be raced by a second one."""
    config = isolated_home / "cfg.yaml"
    config.write_text(yaml.safe_dump({"mcp": {"servers": [
        demo_server("demo"), {"name": "ghost", "type": "local", "command": ["no-such-mcp-server-xyz"]},
        {"name": "noisy", "type": "local", "command": [sys.executable, "-c", NOISY]}]}}))
    monkeypatch.setenv("AI_CODING_CONFIG", str(config))
    try:
        _up()
        yield config
    finally:
        _down()


def _until(args: list[str], text: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        out = CliRunner().invoke(app, args).output
        if text in out or time.monotonic() > deadline:
            return out
        time.sleep(0.1)


def test_status_list_add_and_retry_work_against_the_gateway(served: Path) -> None:
    _until(["status"], "connected")
    out = _until(["status"], "command not found")
    assert "demo" in out and "connected" in out
    ghost = next(line for line in out.splitlines() if "ghost" in line)
    assert "failed" in ghost and "command not found" in ghost
    status = CliRunner().invoke(app, ["status", "--json"])
    assert status.exit_code == 1, "a failed server makes `mcp status` exit non-zero"
    listing = CliRunner().invoke(app, ["list"])
    assert listing.exit_code == 0 and "demo__add" in listing.output and "warn" in listing.output

    added = CliRunner().invoke(app, ["add", "extra", "--auto-approve", "--", sys.executable, str(DEMO), "stdio"])
    assert added.exit_code == 0, added.output
    sidecar = yaml.safe_load((served.parent / "mcp.local.yaml").read_text())
    assert sidecar["servers"][0]["name"] == "extra" and sidecar["servers"][0]["command"][-1] == "stdio"
    catalog = _until(["list"], "extra__echo")
    assert "extra__echo" in catalog and "allow" in catalog

    again = CliRunner().invoke(app, ["add", "extra", "--", "x"])
    assert again.exit_code == 2 and "already exists" in again.output

    retried = CliRunner().invoke(app, ["retry", "ghost"])
    assert retried.exit_code == 0 and "failed" in retried.output


def test_resources_and_prompts_are_listed_read_and_filled_from_the_cli(served: Path) -> None:
    _until(["status"], "connected")
    listed = CliRunner().invoke(app, ["resources", "demo"])
    assert listed.exit_code == 0 and "demo://notes/readme  readme (text/plain): The demo notes." in listed.output
    read = CliRunner().invoke(app, ["read", "demo", "demo://notes/readme"])
    assert read.exit_code == 0 and read.output.strip() == "demo notes: the answer is 42"
    prompts = CliRunner().invoke(app, ["prompts", "demo"])
    assert prompts.exit_code == 0 and "review(path*): Ask for a review of one file." in prompts.output
    filled = CliRunner().invoke(app, ["prompt", "demo", "review", "--arg", "path=calc.py"])
    assert filled.exit_code == 0 and filled.output.strip() == "user: Please review calc.py for bugs."
    failed = CliRunner().invoke(app, ["prompts", "ghost"])
    assert failed.exit_code == 1 and "ghost" in failed.output and "Traceback" not in failed.output


def test_signing_in_to_a_local_server_is_one_readable_error(served: Path) -> None:
    result = CliRunner().invoke(app, ["login", "demo", "--no-browser"])
    assert result.exit_code == 2
    assert "does not sign in with OAuth" in result.output and "Traceback" not in result.output
    unknown = CliRunner().invoke(app, ["logout", "nope"])
    assert unknown.exit_code == 2 and "no MCP server named 'nope'" in unknown.output


def test_with_nothing_running_list_starts_the_services_and_says_how_to_add_a_server(
        isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = isolated_home / "cfg.yaml"
    config.write_text("mcp: {servers: []}\n")
    monkeypatch.setenv("AI_CODING_CONFIG", str(config))
    try:
        out = _until(["list"], "no MCP servers")
        assert "add one with `ai-coding mcp add`" in out, out
        assert CliRunner().invoke(app, ["status"]).exit_code == 0  # nothing failed
    finally:
        _down()


def test_status_with_logs_shows_each_servers_last_lines_under_it(served: Path) -> None:
    out = _until(["status", "--logs", "5"], "set NOISY_TOKEN first")
    lines = out.splitlines()
    noisy = next(i for i, line in enumerate(lines) if line.lstrip().startswith("noisy"))
    assert lines[noisy + 1].split() == ["stderr", "set", "NOISY_TOKEN", "first"], out
    plain = CliRunner().invoke(app, ["status"]).output.splitlines()  # its reason names the last line, nothing more
    assert not any(line.split()[:1] == ["stderr"] for line in plain), plain
    as_json = CliRunner().invoke(app, ["status", "--json", "--logs", "1"]).output
    rows = {row["name"]: row for row in json.loads(as_json)["servers"]}
    assert rows["noisy"]["log"] == [{"level": "stderr", "logger": "", "text": "set NOISY_TOKEN first"}]
    assert rows["ghost"]["log"] == []
    refused = CliRunner().invoke(app, ["status", "--logs", "-1"])
    assert refused.exit_code == 2
