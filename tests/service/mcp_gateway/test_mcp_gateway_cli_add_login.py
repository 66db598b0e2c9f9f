"""`ai-coding mcp add --transport ... --client-id ...` and `mcp login --no-browser` piped, against a
real gateway (``ai-coding up``) and our OAuth test server."""

from __future__ import annotations

import os
import select
import subprocess
import time
from pathlib import Path

import yaml
from typer.testing import CliRunner

from clients.cli.commands.mcp import app

from .test_mcp_gateway_cli import AI_CODING, _until, served

__all__ = ["served"]


def test_add_takes_a_transport_and_oauth_client_options_into_the_sidecar(served: Path) -> None:
    added = CliRunner().invoke(app, ["add", "tracker", "--transport", "sse", "--url", "http://127.0.0.1:9/sse",
                                     "--client-id", "abc", "--client-secret", "${TRACKER_SECRET}",
                                     "--callback-port", "8765"])
    assert added.exit_code == 0, added.output
    entry = yaml.safe_load((served.parent / "mcp.local.yaml").read_text())["servers"][0]
    assert entry["type"] == "remote" and entry["transport"] == "sse" and entry["url"] == "http://127.0.0.1:9/sse"
    assert entry["oauth"] == {"client_id": "abc", "client_secret": "${TRACKER_SECRET}", "callback_port": 8765}
    bad = CliRunner().invoke(app, ["add", "x", "--transport", "stdio", "--url", "http://h/mcp"])
    assert bad.exit_code == 2 and "a stdio server is a command" in bad.output


def test_login_without_a_browser_prints_its_url_at_once_when_piped(served: Path, oauth_demo: str) -> None:
    added = CliRunner().invoke(app, ["add", "secure", "--url", oauth_demo])
    assert added.exit_code == 0, added.output
    _until(["status"], "needs_auth")
    proc = subprocess.Popen([AI_CODING, "mcp", "login", "secure", "--no-browser", "--wait", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"})  # as piped for real
    try:
        assert proc.stdout is not None
        seen = b""
        deadline = time.monotonic() + 60
        while b"http" not in seen and time.monotonic() < deadline:
            if select.select([proc.stdout], [], [], 0.5)[0]:
                chunk = os.read(proc.stdout.fileno(), 4096)
                if not chunk:
                    break
                seen += chunk
        assert b"Open this URL to sign in to secure" in seen and b"http://" in seen, seen
        assert proc.poll() is None, "the URL came only when the command exited"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
