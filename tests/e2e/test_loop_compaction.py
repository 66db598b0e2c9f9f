"""Long sessions against a fake model that enforces its window: compaction keeps every request inside it,
keeps the user's instruction and the project's constraint verbatim, and never loses a message."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from ai_coding.v1 import loop_pb2, memory_pb2, memory_pb2_grpc

from services.fake_model import FakeModelServer
from services.loop.compaction.summary import SUMMARY_MARKER
from services.loop.core.sessions import SessionStore
from tests.service.loop.harness import LoopStack, fake, finished, kinds, model_config, status_name, workspace

__all__ = ["fake", "workspace"]

WINDOW = 32_000
INSTRUCTION = "Refactor the parser module; keep the public API unchanged (ticket PARSE-77)."
CONSTRAINT = "Never push to the main branch."
# ~20 KB of distinct output per call (random bytes, base64 in lines of 100).
BIG_OUTPUT = "head -c 15000 /dev/urandom | base64 -w 100"


def summary_step(**extra: Any) -> dict[str, Any]:
    return {"match": SUMMARY_MARKER, "repeat": "forever",
            "text": f"Goal: {INSTRUCTION}\nDone: ran the output-producing command many times.", **extra}


def bash_step(command: str, repeat: int | str = 1) -> dict[str, Any]:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command}}], "repeat": repeat}


@pytest.fixture
def long_stack(short_dir: Path, workspace: Path, fake: FakeModelServer, isolated_home: Path
               ) -> Iterator[Callable[..., LoopStack]]:
    stacks: list[LoopStack] = []
    (workspace / "AGENTS.md").write_text(f"# Rules\n{CONSTRAINT}\n")

    def make(steps: list[dict[str, Any]], model_window: int = WINDOW, memory: str = "", **compaction: Any) -> LoopStack:
        fake.load_script({"order": "first_match", "context_window": WINDOW, "steps": steps})
        config = model_config(fake.url, max_tool_iterations=1000, duplicate_call_threshold=0,
                              turn_timeout_seconds=1200)
        config["models"]["fake"].update(context_window=model_window, max_tokens=4000, max_retries=0)
        config["compaction"] = compaction
        stack = LoopStack(short_dir, workspace, fake, config, with_tools=True, memory=memory)
        stacks.append(stack)
        return stack

    yield make
    for stack in stacks:
        stack.close()


def turn_requests(fake: FakeModelServer) -> list[dict[str, Any]]:
    """The turn's own requests (not the summary requests compaction makes)."""
    return [r.body for r in fake.chat_requests if SUMMARY_MARKER not in r.last_message and r.status == 200]


def text_of(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in body["messages"])


def session_messages(stack: LoopStack, sid: str) -> list[dict[str, Any]]:
    """The session file's messages, read from disk as a restarted loop would."""
    session, warnings = SessionStore(stack.workspace).load(sid)
    assert not warnings, warnings
    return session.messages


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_300_step_session_of_20kb_outputs_completes_inside_a_32k_window(
        long_stack: Callable[..., LoopStack], fake: FakeModelServer) -> None:
    stack = long_stack([summary_step(), bash_step(BIG_OUTPUT, repeat=300), {"text": "Refactor finished."}])
    sid = stack.open().session_id
    events = stack.start(sid, INSTRUCTION, timeout=540).drain()  # 300 real sandboxed steps: minutes when busy
    end = finished(events)
    assert status_name(end) == "completed", end.reason
    assert end.text == "Refactor finished." and end.iterations == 301
    assert fake.over_window == [] and fake.errors == []  # no request exceeded the window
    compactions = kinds(events).count("compaction_ended")
    assert compactions >= 5
    requests = turn_requests(fake)
    assert len(requests) == 301
    first_compaction = next(i for i, e in enumerate(events) if e.WhichOneof("event") == "compaction_ended")
    assert first_compaction > 0
    for body in requests:  # verbatim in every request, whatever was compacted
        assert INSTRUCTION in text_of(body) and CONSTRAINT in body["messages"][0]["content"]
    # The record keeps every message: compaction changed the view, never the session file.
    messages = session_messages(stack, sid)
    assert len(messages) == 1 + 2 * 300 + 1
    assert sum(1 for m in messages if m["role"] == "tool" and len(m["content"]) > 19_000) == 300
    assert messages[0] == {**messages[0], "role": "user", "content": INSTRUCTION}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_failing_summaries_open_the_breaker_the_fallback_trims_and_history_search_finds_the_output(
        long_stack: Callable[..., LoopStack], fake: FakeModelServer) -> None:
    stack = long_stack([
        {"match": SUMMARY_MARKER, "fault": "server_error", "repeat": "forever"},
        {"match": INSTRUCTION, **bash_step(f"echo NEEDLE-4242-found; {BIG_OUTPUT}")},
        # Enough outputs for more compactions than the breaker's three failures (however large the
        # request's fixed part: tools and instructions grow as features land).
        bash_step(BIG_OUTPUT, repeat=24),
        {"tool_calls": [{"name": "history_search", "arguments": {"query": "NEEDLE-4242"}}]},
        {"match": "NEEDLE-4242-found", "text": "Found it in the archive."},
    ], keep_recent_tool_results=8, keep_recent_tool_tokens=10**9)  # envelopes alone cannot get under the ceiling
    sid, events = stack.turn(INSTRUCTION)
    end = finished(events)
    assert status_name(end) == "completed", end.reason
    assert end.text == "Found it in the archive."
    degraded = [e.degraded.reason for e in events if e.WhichOneof("event") == "degraded"]
    assert sum("summary failed" in d for d in degraded) == 3
    assert any("circuit breaker" in d for d in degraded)
    assert fake.over_window == []
    summaries = [r for r in fake.chat_requests if SUMMARY_MARKER in r.last_message]
    assert len(summaries) == 3  # the breaker stopped asking after three failures
    trimmed = [b for b in turn_requests(fake) if "[context overflow] " in text_of(b)]
    assert trimmed and all("use history_search" in text_of(b) for b in trimmed)
    search = [e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished"
              and e.tool_finished.result.tool == "history_search"]
    assert search and search[0].ok and "NEEDLE-4242-found" in search[0].output
    messages = session_messages(stack, sid)
    assert sum(1 for m in messages if m["role"] == "tool") == 26  # 25 bash + history_search: nothing lost
    assert "NEEDLE-4242-found" in messages[2]["content"]


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("memory", ["service", "down"])
def test_history_search_asks_the_memory_service_and_reads_the_local_archive_when_it_is_down(
        long_stack: Callable[..., LoopStack], fake: FakeModelServer, short_dir: Path, memory: str) -> None:
    stack = long_stack([
        summary_step(),
        {"match": INSTRUCTION, **bash_step(f"echo NEEDLE-4242-found; {BIG_OUTPUT}")},
        bash_step(BIG_OUTPUT, repeat=5),
        {"tool_calls": [{"name": "history_search", "arguments": {"query": "NEEDLE-4242"}}]},
        {"match": "NEEDLE-4242-found", "text": "Found it in the archive."},
    ], memory=memory, threshold=12_000, keep_recent_tool_results=1)
    sid, events = stack.turn(INSTRUCTION)
    end = finished(events)
    assert status_name(end) == "completed", end.reason
    assert "compaction_ended" in kinds(events)
    (search,) = [e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished"
                 and e.tool_finished.result.tool == "history_search"]
    assert search.ok and "NEEDLE-4242-found" in search.output
    offered = ["history_search" in {t["function"]["name"] for t in body.get("tools", [])}
               for body in turn_requests(fake)]
    assert not offered[0] and offered[-1]  # offered once compaction archived something, not before
    if memory == "down":
        assert search.output.startswith("(the memory service is unavailable")
        return
    assert "unavailable" not in search.output
    with grpc.insecure_channel(f"unix:{short_dir}/memory.sock") as channel:  # the memory service indexed it
        found = memory_pb2_grpc.MemoryStub(channel).SearchHistory(memory_pb2.SearchHistoryRequest(
            workspace=str(stack.workspace), session_id=sid, query="NEEDLE-4242", k=3), timeout=30)
    assert any("NEEDLE-4242-found" in m.text for m in found.messages)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_after_a_compaction_requests_stay_under_the_ceiling_until_the_history_really_grows(
        long_stack: Callable[..., LoopStack], fake: FakeModelServer) -> None:
    stack = long_stack([summary_step(), bash_step(BIG_OUTPUT, repeat=40), {"text": "done"}])
    _, events = stack.turn(INSTRUCTION)
    assert status_name(finished(events)) == "completed"
    ceiling = next(e.context_assembled.ceiling_tokens for e in events if e.WhichOneof("event") == "context_assembled")
    sizes = [len(json.dumps(b)) // 4 for b in turn_requests(fake)]
    ended = [i for i, e in enumerate(events) if e.WhichOneof("event") == "compaction_ended"]
    assert ended, "the session never compacted"
    assert all(size < ceiling for size in sizes), (ceiling, sizes)  # never swings back to the full history
    # Each compaction at the ceiling frees at least half of it, so 40 outputs of ~5k tokens need few of
    # them (the L2-only ones in between, which envelope older outputs, never reach the ceiling).
    at_ceiling = [e for e in events if e.WhichOneof("event") == "compaction_started"
                  and "reached the ceiling" in e.compaction_started.reason]
    assert len(at_ceiling) <= 40 * 5_500 // (ceiling // 2) + 1
    # Between compactions the request only grows: the stable part of request N is a prefix of N+1.
    assembled = [i for i, e in enumerate(events) if e.WhichOneof("event") == "context_assembled"]
    bodies = turn_requests(fake)
    for k in range(1, len(bodies)):
        compacted_between = any(assembled[k - 1] < i < assembled[k] for i in ended)
        if compacted_between:
            continue
        before, after = bodies[k - 1]["messages"], bodies[k]["messages"]
        stable = json.dumps(before[:-1])[:-1]
        assert json.dumps(after).startswith(stable), k


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_context_length_refusal_compacts_harder_and_retries_the_step_instead_of_failing(
        long_stack: Callable[..., LoopStack], fake: FakeModelServer) -> None:
    # The model entry claims 64k, the endpoint holds 32k: our ceiling is too high, the provider refuses.
    stack = long_stack([summary_step(), bash_step(BIG_OUTPUT, repeat=8), {"text": "survived"}], model_window=64_000,
                       keep_recent_tool_tokens=10**9)  # the outputs stay verbatim until the (wrong) ceiling
    _, events = stack.turn(INSTRUCTION)
    end = finished(events)
    assert status_name(end) == "completed", end.reason
    assert end.text == "survived"
    assert len(fake.over_window) >= 1  # the provider did refuse ...
    notices = [e.notice.text for e in events if e.WhichOneof("event") == "notice"]
    assert any("compacting harder" in n for n in notices)
    reasons = [e.compaction_started.reason for e in events if e.WhichOneof("event") == "compaction_started"]
    assert any("refused" in r for r in reasons)  # ... and the step was retried after a hard compaction
    assert len(fake.over_window) <= sum("refused" in r for r in reasons)  # one refusal per hard compaction


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_manual_compact_summarizes_now_and_the_next_turn_starts_from_the_checkpoint(
        long_stack: Callable[..., LoopStack], fake: FakeModelServer) -> None:
    stack = long_stack([summary_step(), {"match": INSTRUCTION, **bash_step("echo first-step-output")},
                        {"text": "first turn done"}, {"match": "and now?", "text": "second turn done"}])
    sid, _ = stack.turn(INSTRUCTION)
    reply = stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=sid, command="compact"), timeout=60)
    data = json.loads(reply.data_json)
    assert data["changed"] and data["consumed"] > 0, reply.text
    assert reply.text.startswith("compacted ~")
    budget = json.loads(stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=sid, command="budget"),
                                              timeout=10).data_json)
    assert budget["compactions"] >= 1 and budget["context"]["window"] == WINDOW
    assert 0 < budget["context"]["used"] < budget["context"]["ceiling"]
    assert status_name(finished(stack.start(sid, "and now?").drain())) == "completed"
    last = turn_requests(fake)[-1]
    assert last["messages"][1]["content"].startswith("[checkpoint]")  # the saved checkpoint is the view
    assert INSTRUCTION in last["messages"][1]["content"]
    # a compacted turn carries the working memory: one digest per earlier turn
    assert "<working-memory>\nturn 1 [completed]: Refactor the parser" in last["messages"][-1]["content"]
    assert len(session_messages(stack, sid)) == 6  # and the record has every message
