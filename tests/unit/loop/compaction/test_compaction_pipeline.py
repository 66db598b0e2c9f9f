"""The pipeline: layer order, L4 through a real (fake) model endpoint, the breaker, and the I2 invariants."""

from __future__ import annotations

import asyncio
import copy
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from services.fake_model import FakeModelServer
from services.loop.compaction.pipeline import LAYER_ORDER, Outcome, compact
from services.loop.compaction.settings import CompactionSettings
from services.loop.compaction.state import CompactionState, anchor_of, build_view, validate
from services.loop.compaction.summary import SUMMARY_MARKER
from services.loop.compaction.transcripts import Transcripts
from services.loop.core.pairing import is_paired
from services.loop.model.client import OpenAIModelClient

from .helpers import exchange, history, inputs

Model = Callable[..., tuple[FakeModelServer, OpenAIModelClient]]


def summary_steps(n: int = 20) -> list[dict[str, Any]]:
    return [{"match": SUMMARY_MARKER, "text": f"SUMMARY {k}: the parser fix is under way."} for k in range(n)]


@pytest.fixture
def run(runner: asyncio.Runner) -> Callable[..., Outcome]:
    def go(inp: Any, state: CompactionState, model: Any, **kw: Any) -> Outcome:
        return runner.run(compact(inp, state, model, **kw))
    return go


Run = Callable[..., Outcome]


def archived(workspace: Path) -> dict[int, str]:
    return {r["index"]: r["text"] for r in Transcripts(workspace).records("s1")}


def test_the_pipeline_order_is_l3_l1_l2_l4(tmp_path: Path, summary_model: Model, run: Run) -> None:
    _, model = summary_model(summary_steps())
    s = CompactionSettings(max_messages=60, snip_keep_head=2, snip_keep_tail=40, keep_recent_tool_results=2)
    messages = history(60, 2000)[:-1]
    messages[-1]["content"] = "T" * 70_000  # a trailing giant result
    out = run(inputs(messages, tmp_path, settings=s), CompactionState(), model, force=True)
    names = [stat.name for stat in out.layers]
    assert names[:4] == ["L3", "L1", "L2", "L4"]
    assert names == [n for n in LAYER_ORDER if n in names]
    by = {stat.name: stat for stat in out.layers}
    assert by["L3"].rewritten == 1 and by["L1"].removed > 0 and by["L2"].rewritten > 0 and by["L4"].removed > 0
    assert all(stat.after_tokens <= stat.before_tokens for stat in out.layers)


def test_l4_writes_a_checkpoint_and_every_later_view_is_the_note_plus_the_true_suffix(
        tmp_path: Path, summary_model: Model, run: Run) -> None:
    server, model = summary_model(summary_steps())
    messages = history(40, 3000)
    out = run(inputs(messages, tmp_path), CompactionState(), model)
    c = out.state.checkpoint
    assert c is not None and c.summary.startswith("SUMMARY 0") and c.request == "fix the parser"
    view = build_view(messages, out.state)
    assert view[0]["content"].startswith("[checkpoint]") and "SUMMARY 0" in view[0]["content"]
    assert "<user-request>\nfix the parser\n</user-request>" in view[0]["content"]
    assert view[1:] == messages[c.consumed:] or any("[elided" in str(m["content"]) for m in view)
    assert out.after_tokens <= inputs(messages, tmp_path).budget.target + 500
    # the same state gives the same view for the grown history: no model call, no swing back
    messages += exchange(100, "new output")
    asked = len(server.chat_requests)
    assert build_view(messages, out.state)[-2:] == messages[-2:]
    assert len(server.chat_requests) == asked


def test_the_second_summary_is_incremental_with_the_previous_checkpoint(tmp_path: Path, summary_model: Model, run: Run) -> None:
    server, model = summary_model(summary_steps())
    messages = history(40, 3000)
    first = run(inputs(messages, tmp_path), CompactionState(), model).state
    assert first.checkpoint is not None
    consumed = first.checkpoint.consumed
    for n in range(40):
        messages += exchange(200 + n, f"later output {n} " + "z" * 3000)
    second = run(inputs(messages, tmp_path), first, model).state
    assert second.checkpoint is not None and second.checkpoint.consumed > consumed
    request = server.chat_requests[-1].last_message
    assert "<previous-checkpoint>\nSUMMARY 0" in request
    assert "later output 0 " in request and "output 0 abc" not in request  # only the delta
    assert second.checkpoint.anchor == anchor_of(messages, second.checkpoint.marks)


def test_a_small_delta_is_carried_verbatim_without_a_model_call(tmp_path: Path, summary_model: Model, run: Run) -> None:
    server, model = summary_model(summary_steps())
    messages = history(6, 3000)  # ~4.6k tokens of history
    inp = inputs(messages, tmp_path, window=8000, settings=CompactionSettings(summary_delta_tokens=20_000))
    out = run(inp, CompactionState(), model)
    assert server.chat_requests == [] and out.state.checkpoint is None


def test_a_long_input_is_summarized_in_chunks_and_nothing_is_truncated(tmp_path: Path, summary_model: Model, run: Run) -> None:
    server, model = summary_model(summary_steps(50))
    messages = history(30, 9000)
    for n in range(30):  # unique words, to find each message in the summary requests
        messages[2 + 2 * n]["content"] += f" marker{n}x"
    inp = inputs(messages, tmp_path, window=16000, settings=CompactionSettings(keep_recent_tool_results=40, keep_recent_tool_tokens=10**9))
    out = run(inp, CompactionState(), model)
    assert out.state.checkpoint is not None
    sent = "".join(r.last_message for r in server.chat_requests)
    assert len(server.chat_requests) > 1
    consumed_tools = [n for n in range(30) if 2 + 2 * n < out.state.checkpoint.consumed]
    assert consumed_tools and all(f"marker{n}x" in sent for n in consumed_tools)


def test_failed_summaries_advance_nothing_then_the_breaker_opens_and_the_fallback_trims(
        tmp_path: Path, summary_model: Model, run: Run) -> None:
    server, model = summary_model([{"fault": "server_error", "repeat": "forever"}])
    messages = history(40, 3000)
    state = CompactionState()
    for attempt in range(1, 4):
        for n in range(20 if attempt > 1 else 0):  # the history grows past the ceiling again
            messages += exchange(1000 * attempt + n, f"more output {n} " + "m" * 3000)
        out = run(inputs(messages, tmp_path), state, model)
        state = out.state
        assert state.checkpoint is None and state.failures == attempt  # nothing advanced
        assert any("summary failed" in why for why in out.degraded)
        view = build_view(messages, state)
        assert any(str(m["content"]).startswith("[context overflow] ") for m in view)
        assert out.after_tokens < inputs(messages, tmp_path).budget.ceiling
    asked = len(server.chat_requests)
    messages += [m for n in range(20) for m in exchange(5000 + n, "late " + "q" * 3000)]
    record = copy.deepcopy(messages)
    out = run(inputs(messages, tmp_path), state, model)
    assert len(server.chat_requests) == asked and any("circuit breaker" in why for why in out.degraded)
    assert messages == record and out.after_tokens <= inputs(messages, tmp_path).budget.target
    hidden = [i for o in state.omissions for i in range(o.start, o.end)]
    assert set(hidden) <= set(archived(tmp_path))  # what the fallback hid was archived first


def test_what_l4_consumes_is_archived_before_the_model_is_asked(tmp_path: Path, summary_model: Model, run: Run) -> None:
    server, model = summary_model([{"fault": "server_error"}, *summary_steps()])
    messages = history(40, 3000)
    failed = run(inputs(messages, tmp_path), CompactionState(), model)
    assert failed.state.checkpoint is None and len(archived(tmp_path)) > 10  # archived although it failed
    assert failed.state.omissions  # the fallback hid what it had to, declared and archived
    done = run(inputs(messages, tmp_path), failed.state, model, force=True).state
    assert done.checkpoint is not None and done.omissions == ()  # the next summary covers what was trimmed
    assert set(range(done.checkpoint.consumed)) <= set(archived(tmp_path))
    summarized = "".join(r.last_message for r in server.chat_requests[1:])
    assert "output 1 abc" in summarized and "output 39 abc" in summarized  # a failed summary lost no delta


def test_a_summary_over_its_time_budget_degrades_to_the_trim(tmp_path: Path, summary_model: Model, run: Run) -> None:
    _, model = summary_model([{"match": SUMMARY_MARKER, "text": "late", "delay_ms": 3000}])
    inp = inputs(history(40, 3000), tmp_path, settings=CompactionSettings(summary_timeout_seconds=0.5, keep_recent_tool_results=30, keep_recent_tool_tokens=10**9))
    out = run(inp, CompactionState(), model)
    assert out.state.checkpoint is None and out.state.failures == 1
    assert any("budget" in why for why in out.degraded)


def test_success_is_judged_by_content_not_by_message_count(tmp_path: Path, run: Run) -> None:
    messages = history(8, 3000)
    s = CompactionSettings(keep_recent_tool_results=1)
    out = run(inputs(messages, tmp_path, window=8000, settings=s), CompactionState(), None)
    assert len(build_view(messages, out.state)) == len(messages)  # same count ...
    assert out.after_tokens < out.before_tokens and out.changed  # ... but fewer tokens: a success
    assert out.state.compactions == 1


def test_a_rewritten_history_invalidates_the_checkpoint_anchor(tmp_path: Path, summary_model: Model, run: Run) -> None:
    _, model = summary_model(summary_steps())
    messages = history(40, 3000)
    state = run(inputs(messages, tmp_path), CompactionState(), model).state
    assert validate(messages, state) == (state, "")
    rewritten = copy.deepcopy(messages)
    rewritten[3]["content"] = "someone edited this"
    dropped, why = validate(rewritten, state)
    assert dropped.checkpoint is None and "changed" in why
    assert validate(messages[:5], state)[0].checkpoint is None  # shorter than what it covered


def test_state_survives_a_json_round_trip_and_garbage_reads_as_no_state(tmp_path: Path, summary_model: Model, run: Run) -> None:
    _, model = summary_model(summary_steps())
    messages = history(40, 3000)
    state = run(inputs(messages, tmp_path), CompactionState(), model).state
    assert CompactionState.from_json(json.loads(json.dumps(state.to_json()))) == state
    garbages: list[Any] = [None, [], {"checkpoint": {"summary": "x"}}, {"overlays": {"a": 1}}]
    for garbage in garbages:
        assert CompactionState.from_json(garbage) == CompactionState()


def _random_history(rng: random.Random) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "task"}]
    for n in range(rng.randint(5, 120)):
        kind = rng.random()
        if kind < 0.1:
            messages.append({"role": "user", "content": f"note {n}"})
        elif kind < 0.25:
            messages.append({"role": "assistant", "content": f"thinking {n} " * rng.randint(1, 50)})
        else:
            calls = rng.randint(1, 3)
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{n}_{k}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
                for k in range(calls)]})
            messages += [{"role": "tool", "tool_call_id": f"c{n}_{k}", "content": "r" * rng.randint(10, 9000)}
                         for k in range(calls)]
    return messages


def test_i2_every_message_is_verbatim_in_view_or_covered_and_pairs_hold_on_every_exit(
        tmp_path: Path, summary_model: Model, run: Run) -> None:
    _, model = summary_model([{"match": SUMMARY_MARKER, "text": "S", "repeat": "forever"}])
    _, failing = summary_model([{"fault": "server_error", "repeat": "forever"}])
    rng = random.Random(12)
    for trial in range(25):
        messages = _random_history(rng)
        pinned = max(i for i, m in enumerate(messages) if m["role"] == "user")
        s = CompactionSettings(max_messages=rng.choice([40, 400]), snip_keep_head=3, snip_keep_tail=20,
                               keep_recent_tool_results=rng.randint(0, 4))
        (tmp_path / str(trial)).mkdir()
        inp = inputs(messages, tmp_path / str(trial), window=rng.choice([8000, 16000, 32000]), settings=s,
                     pinned=pinned)
        state = CompactionState()
        for _ in range(2):
            state = run(inp, state, rng.choice([model, failing, None]), force=rng.random() < 0.3).state
            view = build_view(messages, state)
            assert is_paired(view)
            shown = {id(m) for m in view}
            hidden = {i for o in state.omissions for i in range(o.start, o.end)}
            saved = archived(tmp_path / str(trial)) if hidden or state.consumed else {}
            for i, m in enumerate(messages):
                verbatim = id(m) in shown
                overlaid = i in state.overlays and i >= state.consumed and i not in hidden
                covered = i < state.consumed and i in saved
                declared = i in hidden and i in saved
                assert verbatim or overlaid or covered or declared, (trial, i)
            assert id(messages[pinned]) in shown or (
                state.checkpoint is not None and state.checkpoint.request == messages[pinned]["content"])
