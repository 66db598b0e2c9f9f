"""webfetch cannot reach the host's own network on the model's say: through `ai-coding run --json
--auto-approve` (CLI, supervisor, loop; the model is the scripted fake model), against a secret
server on 127.0.0.1. The allow-list names every target, so the gate lets each fetch start and the
address policy alone has to refuse it; a name resolving to a private address comes from the
resolver stub (no packet goes there)."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from services.fake_model import FakeModelServer

SECRET = "HOST-LOOPBACK-SECRET-7731"


class _Secret(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []
    port: ClassVar[int] = 0

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        if self.path == "/to-loopback":
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{self.port}/secret")
            self.end_headers()
            return
        body = SECRET.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def secret_port() -> Iterator[int]:
    _Secret.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Secret)
    _Secret.port = int(server.server_address[1])
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clients.cli.entry", *args], capture_output=True, text=True,
                          timeout=180, stdin=subprocess.DEVNULL, check=False)


def targets(port: int) -> list[str]:
    return [f"http://127.0.0.1:{port}/secret", f"http://0.0.0.0:{port}/secret", f"http://localhost:{port}/secret",
            f"http://site.test:{port}/to-loopback", f"http://corp.test:{port}/secret",
            f"http://meta.test:{port}/secret"]


@pytest.fixture
def run_stack(isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
              secret_port: int) -> Iterator[dict[str, Any]]:
    calls = [{"name": "webfetch", "arguments": {"url": url}} for url in targets(secret_port)]
    script = [{"name": "fetch", "tool_calls": calls}, {"name": "done", "text": "fetched"},
              {"name": "unlisted", "tool_calls": [{"name": "webfetch", "arguments": {
                  "url": f"http://other.test:{secret_port}/secret"}}]},
              {"name": "done2", "text": "ok"}]
    hosts = tmp_path / "hosts.json"
    hosts.write_text(json.dumps({"corp.test": ["10.1.2.3"], "meta.test": ["169.254.169.254"],
                                 "other.test": ["127.0.0.1"]}))
    monkeypatch.setenv("AI_CODING_TEST_HOSTS", str(hosts))
    allow = ", ".join(f"'{h}:{secret_port}'" for h in ("127.0.0.1", "0.0.0.0", "localhost", "site.test",
                                                         "corp.test", "meta.test"))
    with FakeModelServer(script) as model:
        config = tmp_path / "user-config" / "config.yaml"
        config.parent.mkdir()
        config.write_text(
            "default_model: fake\n"
            f"models:\n  fake:\n    provider: generic\n    model: fake-model\n    base_url: {model.url}\n"
            "    api_key: test-key\n    max_retries: 0\n"
            "loop:\n  harvest: false\n  mcp: false\n"
            f"net:\n  pinned_hosts:\n    site.test: '127.0.0.1:{secret_port}'\n"
            f"  webfetch_allow_domains: [{allow}]\n")
        monkeypatch.setenv("AI_CODING_CONFIG", str(config))
        workspace = tmp_path / "ws"
        workspace.mkdir()
        try:
            yield {"workspace": workspace, "model": model}
        finally:
            cli("down")


def results(stdout: str) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    return [e["toolFinished"]["result"] for e in events if "toolFinished" in e]


@pytest.mark.slow
def test_webfetch_under_auto_approve_reaches_no_host_address_directly_by_redirect_or_by_name(
        run_stack: dict[str, Any], secret_port: int) -> None:
    ws = run_stack["workspace"]
    run = cli("run", "--json", "--auto-approve", "-w", str(ws), "fetch them")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    got = results(run.stdout)
    assert len(got) == len(targets(secret_port))
    for result in got:
        assert not result.get("ok") and result["error"]["code"] == "address_refused", result
    assert _Secret.hits == ["/to-loopback"]  # the pinned site answered its redirect; /secret never ran
    assert SECRET not in run.stdout
    assert all(SECRET not in json.dumps(r.body, default=str) for r in run_stack["model"].requests)
    # An unlisted host: auto-approve does not approve webfetch, and nobody can answer headless.
    second = cli("run", "--json", "--auto-approve", "-w", str(ws), "now the unlisted one")
    (unlisted,) = results(second.stdout)
    assert not unlisted.get("ok"), unlisted
    assert unlisted["error"]["code"] in ("denied_by_user", "permission_denied"), unlisted
    assert _Secret.hits == ["/to-loopback"]
