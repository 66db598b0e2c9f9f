"""/memory and /mcp in the real REPL (pexpect pty) against the real memory service and MCP gateway.

Notes are written through the memory service's own WriteNote RPC; MCP servers are added to the
running gateway with `ai-coding mcp add` (the sidecar flow), one our stdio test server, one a
command that does not exist. The stack and the terminal helpers are test_repl_session's.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import grpc
from ai_coding.v1 import memory_pb2, memory_pb2_grpc

from services.kernel.endpoints import parse_endpoint
from tests.e2e.test_repl_session import Term, plain, script, stack, workspace
from tests.support.cli_stack import Stack
from tests.support.cli_stack import cli as _cli
from tests.support.on_demand import started

__all__ = ["stack", "workspace"]  # fixtures used by name below

DEMO_SERVER = Path(__file__).resolve().parents[1] / "mcp_servers" / "demo_server.py"
MISSING_COMMAND = "/nonexistent/aic-no-such-mcp-server"


def _endpoint(stack: Stack, service: str) -> str:
    status = _cli(stack.env, "status", "--json")
    assert status.returncode == 0, status.stderr
    endpoint: str = json.loads(status.stdout)["services"][service]["endpoint"]
    return endpoint


def _memory_stub(stack: Stack) -> tuple[grpc.Channel, memory_pb2_grpc.MemoryStub]:
    endpoint = _endpoint(stack, "memory")
    started(parse_endpoint("memory", endpoint))
    channel = grpc.insecure_channel(f"unix:{endpoint.removeprefix('unix://')}")
    return channel, memory_pb2_grpc.MemoryStub(channel)


def _write_notes(stack: Stack, workspace: Path) -> dict[str, memory_pb2.Note]:
    channel, stub = _memory_stub(stack)
    candidates = {
        "sqlite": memory_pb2.NoteCandidate(text="The store uses SQLite in WAL mode", kind="decision",
                                           importance=4, scene="storage", evidence="tool"),
        "pytest": memory_pb2.NoteCandidate(text="Tests run with pytest -q from the repository root",
                                           kind="fact", importance=3, scene="testing", evidence="tool"),
        "markup": memory_pb2.NoteCandidate(text="Release notes mention [bold]gRPC[/bold] and [red]tabs[/red]",
                                           kind="fact", importance=2, evidence="model"),
    }
    notes = {}
    with channel:
        for key, candidate in candidates.items():
            got = stub.WriteNote(memory_pb2.WriteNoteRequest(workspace=str(workspace), note=candidate), timeout=30)
            assert not got.rejected_reason, got.rejected_reason
            notes[key] = got.note
    return notes


def _notes(stack: Stack, workspace: Path) -> dict[str, memory_pb2.Note]:
    channel, stub = _memory_stub(stack)
    with channel:
        listed = stub.ListNotes(memory_pb2.ListNotesRequest(workspace=str(workspace)), timeout=30).notes
    return {note.id: note for note in listed}


def test_memory_lists_notes_by_kind_searches_pins_and_forgets_only_after_y(stack: Stack, workspace: Path) -> None:
    notes = _write_notes(stack, workspace)
    sqlite, pytest_note, markup = notes["sqlite"], notes["pytest"], notes["markup"]
    term = Term(stack, workspace)
    try:
        term.line("/memory")
        term.expect("decision (1)")
        out = plain(term.expect("evidence: tool=2 model=1"))
        assert "fact (2)" in out
        scenes = ", ".join(f"{scene}=1" for scene in sorted((sqlite.scene, pytest_note.scene)))
        assert f"scenes: {scenes}" in out
        assert "Release notes mention [bold]gRPC[/bold] and [red]tabs[/red]" in out  # literal, not markup

        term.line("/memory search sqlite wal")
        out = plain(term.expect("found"))
        out += plain(term.expect("(decision)"))
        assert sqlite.id in out and pytest_note.id not in out
        assert _notes(stack, workspace)[sqlite.id].hits == 0  # a person's search is not the model's use

        term.line("/memory show n")  # every id starts with n: ambiguous
        out = plain(term.expect("candidates:"))
        out += plain(term.expect(markup.id))
        assert "is ambiguous" in out

        term.line(f"/memory pin {pytest_note.id[:-3]}")
        term.expect(f"pinned {pytest_note.id}")
        assert _notes(stack, workspace)[pytest_note.id].pinned
        term.line("/memory")
        term.expect(f"{pytest_note.id}  *3 [{pytest_note.scene}]")

        term.line(f"/memory show {sqlite.id[:-3]}")
        out = plain(term.expect("updated:"))
        assert "SQLite in WAL mode" in out and "storage" in out

        term.line(f"/memory forget {markup.id[:-3]}")
        term.expect("? [y/N]")
        term.expect("forget? [y/N]")  # the prompt asks too
        term.line("")  # Enter alone is no
        term.expect(f"kept {markup.id}")
        assert markup.id in _notes(stack, workspace)

        term.line(f"/memory forget {markup.id[:-3]}")
        term.expect("forget? [y/N]")
        term.line("y")
        term.expect(f"forgot {markup.id}")
        left = _notes(stack, workspace)
        assert markup.id not in left and set(left) == {sqlite.id, pytest_note.id}
    finally:
        term.close()


def _wait_for_states(stack: Stack, wanted: dict[str, str], timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    servers: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status = _cli(stack.env, "mcp", "status", "--json")
        if status.returncode in (0, 1):  # 1: a server has failed (still a full report)
            assert status.returncode == int(any(s["state"] == "failed" for s in json.loads(status.stdout)["servers"]))
            servers = {s["name"]: s for s in json.loads(status.stdout)["servers"]}
            if all(servers.get(name, {}).get("state") == state for name, state in wanted.items()):
                return servers
        time.sleep(0.5)
    raise AssertionError(f"MCP servers never reached {wanted}: {servers}")


def test_mcp_shows_a_connected_and_a_failed_server_and_retry_reports_the_new_state(
        stack: Stack, workspace: Path) -> None:
    for args in (["demo", "--", sys.executable, str(DEMO_SERVER), "stdio"], ["broken", "--", MISSING_COMMAND]):
        added = _cli(stack.env, "mcp", "add", *args)
        assert added.returncode == 0, added.stderr
    servers = _wait_for_states(stack, {"demo": "connected", "broken": "failed"})
    term = Term(stack, workspace)
    try:
        term.line("/mcp")
        out = plain(term.expect("broken"))
        out += plain(term.expect("\n"))
        demo_row = next(line for line in out.splitlines() if line.strip().startswith("demo "))
        assert "connected" in demo_row and f"{servers['demo']['tools']} tools" in demo_row
        broken_row = next(line for line in out.splitlines() if line.strip().startswith("broken "))
        assert "failed" in broken_row
        assert servers["broken"]["reason"][:30] in broken_row

        term.line("/mcp retry demo")
        term.expect("retrying demo…")
        out = plain(term.expect_re(r"demo +local +\w+"))
        assert "connected" in out

        attempts = servers["broken"]["attempts"]
        term.line("/mcp retry broken")
        term.expect("retrying broken…")
        out = plain(term.expect_re(r"broken +local +\w+"))
        assert "failed" in out
        assert _wait_for_states(stack, {"broken": "failed"})["broken"]["attempts"] > attempts

        term.line("/mcp retry nosuch")
        out = plain(term.expect("error: /mcp retry nosuch: "))
        out = plain(term.expect("\n"))
        assert "no MCP server named 'nosuch'" in out
    finally:
        term.close()


def test_memory_service_and_gateway_down_are_one_line_each_and_the_repl_goes_on(
        stack: Stack, workspace: Path, short_dir: Path) -> None:
    # This client looks for both at sockets nobody serves; the loop is the stack's own.
    env = {**stack.env, "AI_CODING_MEMORY_ENDPOINT": f"unix:{short_dir}/memory.sock",
           "AI_CODING_MCP_GATEWAY_ENDPOINT": f"unix:{short_dir}/mcp.sock"}
    term = Term(Stack(env, stack.model, stack.base), workspace)
    try:
        term.line("/memory")
        out = plain(term.expect("ai-coding up`)"))
        assert f"error: the memory service is not reachable at unix://{short_dir}/memory.sock" in out
        term.line("/mcp")
        out = plain(term.expect("ai-coding up`)"))
        assert f"error: the MCP gateway is not reachable at unix://{short_dir}/mcp.sock" in out
        term.line("/help")
        term.expect("/quit")
        assert "Traceback" not in plain(term.seen)
    finally:
        term.close()


def test_an_mcp_servers_elicitation_is_asked_in_the_repl_field_by_field(stack: Stack, workspace: Path) -> None:
    added = _cli(stack.env, "mcp", "add", "--auto-approve", "signup", "--", sys.executable, str(DEMO_SERVER), "stdio")
    assert added.returncode == 0, added.stderr
    _wait_for_states(stack, {"signup": "connected"})
    script(stack, [
        {"tool_calls": [{"name": "mcp_call", "arguments": {"server": "signup", "tool": "signup", "input": {}}}]},
        {"match": "signed up Ada on the pro plan", "text": "Signed up on pro."},
    ])
    term = Term(stack, workspace)
    try:
        term.line("sign me up")
        term.expect("MCP server 'signup' asks: Sign up for the demo")
        term.expect("(1/2) Name: Your name")
        term.expect("answer›")
        term.line("Ada")
        term.expect("→ Ada")
        term.expect("(2/2) Plan: Which plan")
        term.expect("2. pro")
        term.expect("answer›")
        term.key("2")
        term.expect("→ pro")
        term.expect("Signed up on pro.")
        term.expect("● completed")
    finally:
        term.close()
    results = [str(m.get("content")) for m in stack.model.chat_requests[-1].messages if m.get("role") == "tool"]
    assert "signed up Ada on the pro plan" in results[-1]
