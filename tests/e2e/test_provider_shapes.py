"""Issue 20 "Must show": each provider's streaming quirk, emulated by the fake model, through ``ai-coding run``.

One set of real services serves every test here (started by the first ``run``); each test loads
its own script into the same fake model and reads what the loop sent back in the recorded requests.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clients.cli.runtime import descendants, pid_alive
from services.fake_model import FakeModelServer

pytestmark = pytest.mark.slow


def cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clients.cli.entry", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, check=False)


def _config(url: str) -> str:
    return (
        "default_model: fake\n"
        "models:\n"
        "  fake:\n"
        "    provider: generic\n"
        "    model: fake-model\n"
        f"    base_url: {url}\n"
        "    api_key: test-key\n"
        "    max_retries: 0\n"
        "    price_input_per_mtok: 1.0\n"
        "    price_output_per_mtok: 2.0\n"
        "  ds:\n"
        "    provider: deepseek\n"
        "    model: deepseek-flash\n"
        f"    base_url: {url}\n"
        "    api_key: test-key\n"
        "    max_retries: 0\n"
        "    thinking: on\n"
        "    reasoning_effort: max\n"
        "loop:\n"
        "  harvest: false\n"
    )


@pytest.fixture(scope="module")
def stack() -> Iterator[dict[str, Any]]:
    """Services, a fake model and a workspace shared by this module; everything stopped at the end."""
    root = Path(tempfile.mkdtemp(prefix="aic-ps-", dir="/tmp"))
    os.chmod(root, 0o700)
    home = root / "home"
    (home / ".config").mkdir(parents=True)
    with FakeModelServer([]) as model, pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(home))
        mp.setenv("XDG_CONFIG_HOME", str(home / ".config"))
        mp.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
        mp.setenv("AI_CODING_RUNTIME_DIR", str(root / "run"))
        for var in ("AI_CODING_TRUST_PROJECT", "AI_CODING_MODEL", "AI_CODING_BASE_URL", "AI_CODING_API_KEY",
                    "AI_CODING_PROVIDER", "OPENAI_API_KEY", "DEEPSEEK_API_KEY"):
            mp.delenv(var, raising=False)
        config = root / "config.yaml"
        config.write_text(_config(model.url))
        mp.setenv("AI_CODING_CONFIG", str(config))
        workspace = root / "ws"
        workspace.mkdir()
        try:
            yield {"model": model, "workspace": workspace}
        finally:
            try:
                sup_pid: int | None = int((root / "run" / "supervisor.pid").read_text())
            except (OSError, ValueError):
                sup_pid = None
            left = descendants(sup_pid) if sup_pid else []
            cli("down")
            for pid in [*left, *([sup_pid] if sup_pid else [])]:
                if pid_alive(pid):
                    os.kill(pid, signal.SIGKILL)
    subprocess.run(["rm", "-rf", str(root)], check=False)


def run_turn(stack: dict[str, Any], script: list[dict[str, Any]], prompt: str, *extra: str,
             load: bool = True) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    model: FakeModelServer = stack["model"]
    if load:
        model.load_script(script)
    done = cli("run", "--json", "--auto-approve", "-w", str(stack["workspace"]), *extra, prompt)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip().startswith("{")]
    return done, events


def finished(events: list[dict[str, Any]]) -> dict[str, Any]:
    end: dict[str, Any] = events[-1]["turnFinished"]
    return end


def results(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["toolFinished"]["result"] for e in events if "toolFinished" in e]


def assistants(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "assistant"]


def test_deepseek_thinking_gets_reasoning_back_exactly_on_tool_calling_turns(stack: dict[str, Any]) -> None:
    ws: Path = stack["workspace"]
    model: FakeModelServer = stack["model"]
    (ws / "ds_notes.txt").write_text("alpha\n")
    model.load_script([
        {"name": "read", "reasoning": "R1 read the notes", "require_reasoning_echo": True,
         "tool_calls": [{"name": "read", "arguments": {"path": "ds_notes.txt"}}]},
        {"name": "count", "reasoning": "R2 count them", "match": "alpha", "require_reasoning_echo": True,
         "tool_calls": [{"name": "bash", "arguments": {"command": "wc -l ds_notes.txt"}}]},
        {"name": "answer", "reasoning": "R3 answer", "text": "one line", "require_reasoning_echo": True},
        {"name": "plain", "reasoning": "R4 no tools", "text": "hello back", "require_reasoning_echo": True},
        {"name": "third", "text": "bye", "require_reasoning_echo": True},
    ])
    before = len(model.chat_requests)
    first, events = run_turn(stack, [], "count the lines of ds_notes.txt", "-m", "ds", load=False)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    session = events[0]["sessionId"]
    for prompt in ("just say hello", "and now bye"):
        done, _ = run_turn(stack, [], prompt, "-m", "ds", "--session", session, load=False)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert model.errors == []
    bodies = [r.body for r in model.chat_requests[before:]]
    assert len(bodies) == 5
    sent = [[m.get("reasoning_content") for m in assistants(b)] for b in bodies]
    assert sent == [
        [],
        ["R1 read the notes"],
        ["R1 read the notes", "R2 count them"],
        ["R1 read the notes", "R2 count them", "R3 answer"],
        ["R1 read the notes", "R2 count them", "R3 answer", None],  # R4's turn made no tool call
    ]
    assert all("reasoning" not in m for b in bodies for m in b["messages"])
    assert all(b["thinking"] == {"type": "enabled"} and b["reasoning_effort"] == "max" for b in bodies)


def test_ollama_parallel_calls_all_with_index_zero_run_as_separate_calls(stack: dict[str, Any]) -> None:
    ws: Path = stack["workspace"]
    (ws / "a.txt").write_text("content-of-a\n")
    (ws / "b.txt").write_text("content-of-b\n")
    done, events = run_turn(stack, [
        {"wire": "index_zero", "tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}},
                                              {"name": "read", "arguments": {"path": "b.txt"}}]},
        {"match": "content-of-b", "text": "read both"},
    ], "read a.txt and b.txt")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    got = results(events)
    assert [(r["tool"], r.get("ok", False)) for r in got] == [("read", True), ("read", True)]
    # Parallel reads finish in either order; each file was read by its own call.
    assert sorted("content-of-a" in r["output"] for r in got) == [False, True]
    assert sorted("content-of-b" in r["output"] for r in got) == [False, True]
    assert finished(events)["text"] == "read both"


def test_whole_calls_with_neither_index_nor_id_run_as_separate_calls(stack: dict[str, Any]) -> None:
    (stack["workspace"] / "c.txt").write_text("content-of-c\n")
    done, events = run_turn(stack, [
        {"wire": "no_index", "tool_calls": [{"name": "read", "arguments": {"path": "c.txt"}},
                                            {"name": "glob", "arguments": {"pattern": "*.txt"}}]},
        {"match": "c.txt", "text": "done"},
    ], "read c.txt and list txt files")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    got = results(events)
    # Parallel calls finish in either order.
    assert sorted((r["tool"], r.get("ok", False)) for r in got) == [("glob", True), ("read", True)]
    ids = [e["toolStarted"]["callId"] for e in events if "toolStarted" in e]
    assert len(set(ids)) == 2


def test_an_emoji_split_between_chunks_reaches_the_user_whole(stack: dict[str, Any]) -> None:
    done, events = run_turn(stack, [
        {"wire": "split_surrogates", "text": "Done \U0001F600 and shipped \U0001F680.", "chunk_chars": 4},
    ], "celebrate")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert finished(events)["text"] == "Done \U0001F600 and shipped \U0001F680."
    assert "\ufffd" not in done.stdout


def test_a_call_cut_off_at_the_output_limit_is_named_and_a_shorter_call_follows(stack: dict[str, Any]) -> None:
    ws: Path = stack["workspace"]
    done, events = run_turn(stack, [
        {"tool_calls": [{"name": "write", "arguments_raw": '{"path": "long.txt", "content": "aaaaaaaaaa'}],
         "finish_reason": "length"},
        {"match": "cut off at the model's output limit",
         "tool_calls": [{"name": "write", "arguments": {"path": "long.txt", "content": "short\n"}}]},
        {"match": "long.txt", "text": "written"},
    ], "write long.txt")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    first, second = results(events)
    assert first["error"]["code"] == "truncated_call" and "shorter call" in first["error"]["message"]
    assert second.get("ok") is True
    assert (ws / "long.txt").read_text() == "short\n"


def test_chunks_shaped_as_message_instead_of_delta_are_read(stack: dict[str, Any]) -> None:
    (stack["workspace"] / "m.txt").write_text("content-of-m\n")
    done, events = run_turn(stack, [
        {"wire": "message", "text": "Reading.", "tool_calls": [{"name": "read", "arguments": {"path": "m.txt"}}]},
        {"wire": "message", "match": "content-of-m", "text": "m.txt holds content-of-m"},
    ], "read m.txt")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert [r["tool"] for r in results(events)] == ["read"]
    assert finished(events)["text"] == "m.txt holds content-of-m"


def test_without_reported_usage_the_cost_is_unknown_not_zero(stack: dict[str, Any]) -> None:
    done, events = run_turn(stack, [{"text": "no usage here", "usage_shape": "none"}], "hello")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    usage = finished(events).get("usage", {})
    assert "costUsd" not in usage, usage
    priced, events = run_turn(stack, [{"text": "usage here", "usage": {"prompt_tokens": 1000,
                                                                      "completion_tokens": 500}}], "hello again")
    assert priced.returncode == 0
    assert finished(events)["usage"]["costUsd"] == pytest.approx((1000 * 1.0 + 500 * 2.0) / 1e6)
