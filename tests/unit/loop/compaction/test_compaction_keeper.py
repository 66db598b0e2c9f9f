"""The keeper between the turn and the pipeline: the trigger figure, working memory, the two tools."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from services.fake_model import FakeModelServer
from services.kernel.tool_args import ArgumentError, parse_args
from services.loop.compaction.history import HistorySearchArgs
from services.loop.compaction.keeper import CheckpointNoteArgs, ContextKeeper, pinned_index
from services.loop.compaction.settings import CompactionSettings, budget_for
from services.loop.compaction.summary import SUMMARY_MARKER
from services.loop.compaction.transcripts import Transcripts
from services.loop.core.turn_events import CompactionEnded, CompactionStarted, EventBody
from services.loop.model.client import OpenAIModelClient

from .helpers import exchange, history

Model = Callable[..., tuple[FakeModelServer, OpenAIModelClient]]


def keeper(workspace: Path, **settings: Any) -> ContextKeeper:
    s = CompactionSettings(**settings)
    return ContextKeeper(s, budget_for(s, "m", 32_000, 4000), "s1", Transcripts(workspace))


def test_the_trigger_carries_the_providers_figure_forward_until_a_compaction(tmp_path: Path) -> None:
    k = keeper(tmp_path)
    messages = history(2, 100)
    carried, ours = k.estimates(messages, 500)
    assert carried == 0 and ours > 500
    k.observe(ours + 3000)  # the provider counts more than we do
    messages += exchange(9, "x" * 400)
    carried, grown = k.estimates(messages, 500)
    assert carried == ours + 3000 + (grown - ours)
    k.state = type(k.state)(compactions=1)  # after a compaction the old figure says nothing
    assert k.estimates(messages, 500)[0] == 0


def test_prepare_compacts_only_at_the_ceiling_and_reports_started_and_ended(
        tmp_path: Path, summary_model: Model, runner: asyncio.Runner) -> None:
    _, model = summary_model([{"match": SUMMARY_MARKER, "text": "S", "repeat": "forever"}])
    k = keeper(tmp_path, keep_recent_tool_results=30, keep_recent_tool_tokens=10**9)
    events: list[EventBody] = []
    saves: list[int] = []
    small = history(3, 1000)
    assert not runner.run(k.prepare(small, 500, "fix the parser", model, events.append, lambda: saves.append(1)))
    assert events == [] and saves == []
    big = history(40, 3000)
    assert runner.run(k.prepare(big, 500, "fix the parser", model, events.append, lambda: saves.append(1)))
    assert [type(e) for e in events] == [CompactionStarted, CompactionEnded] and saves == [1]
    ended = events[-1]
    assert isinstance(ended, CompactionEnded) and ended.estimated_after < k.budget.ceiling
    assert k.view(big)[0]["content"].startswith("[checkpoint]") and k.compacted_this_turn


def test_older_tool_output_past_the_recent_budget_is_enveloped_under_the_ceiling_without_a_model_call(
        tmp_path: Path, summary_model: Model, runner: asyncio.Runner) -> None:
    fake, model = summary_model([{"match": SUMMARY_MARKER, "text": "S", "repeat": "forever"}])
    k = keeper(tmp_path)  # the default: a tenth of the 32k window (3200 tokens) of recent output stays verbatim
    messages: list[dict[str, Any]] = [{"role": "user", "content": "fix the parser"}]
    for n in range(3):
        messages += exchange(n, f"out {n} " + "z" * 8000)  # ~2000 tokens each
    events: list[EventBody] = []
    assert runner.run(k.prepare(messages, 500, "fix the parser", model, events.append, lambda: None))
    started = events[0]
    assert isinstance(started, CompactionStarted) and "kept verbatim" in started.reason
    assert started.estimated_tokens < k.budget.ceiling
    tools = [m["content"] for m in k.view(messages) if m["role"] == "tool"]
    assert tools[-1] == messages[-1]["content"]  # the newest result as it is
    assert len(tools) == 3 and all(t.startswith("[elided: ") for t in tools[:-1])
    assert fake.chat_requests == []  # no summary was asked for
    events.clear()
    assert not runner.run(k.prepare(messages, 500, "fix the parser", model, events.append, lambda: None))
    assert events == []  # nothing stale any more: no compaction at every step
    small_ws = tmp_path / "small"
    small_ws.mkdir()
    small: list[dict[str, Any]] = [{"role": "user", "content": "list the files"}]
    for n in range(8):
        small += exchange(n, f"file_{n}.py " * 40)  # short outputs stay verbatim
    assert not runner.run(keeper(small_ws).prepare(small, 500, "list the files", model, events.append,
                                                   lambda: None))
    assert events == []


def test_the_working_memory_ring_keeps_the_newest_and_shows_only_on_a_compacted_turn(tmp_path: Path) -> None:
    k = keeper(tmp_path, working_memory_keep=3)
    for n in range(5):
        k.end_turn(n, "completed", f"request {n}", f"Answer {n}. More detail.", ["a.py"] if n == 4 else [])
    assert [d.split(" [")[0] for d in k.digests] == ["turn 2", "turn 3", "turn 4"]
    assert k.digests[-1] == "turn 4 [completed]: request 4 -> Answer 4. (changed a.py)"
    assert k.tail_part() == {}  # an ordinary turn pays nothing
    k.compacted_this_turn = True
    assert k.tail_part()["working-memory"].splitlines()[0].startswith("turn 2")


def test_checkpoint_write_replaces_the_result_sentence_of_the_turns_digest(tmp_path: Path) -> None:
    k = keeper(tmp_path, working_memory_note_chars=40)
    assert not k.checkpoint_write("c1", CheckpointNoteArgs("  ")).ok
    out = k.checkpoint_write("c2", CheckpointNoteArgs("README missing; ask the user which file to document " * 3))
    assert out.ok and len(k.note) == 40
    k.end_turn(1, "max_iterations", "document it", "long answer", [])
    assert "README missing" in k.digests[-1] and "long answer" not in k.digests[-1] and k.note == ""


def test_history_search_finds_archived_messages_and_says_so_when_nothing_matches(tmp_path: Path) -> None:
    k = keeper(tmp_path)
    messages = history(3, 100)
    messages[4]["content"] = "the migration failed with ERR_LOCKED on table users"
    assert k.history_search("c1", HistorySearchArgs("ERR_LOCKED")).output.startswith("no archived message")
    k.transcripts.archive("s1", messages, range(0, 6))
    found = k.history_search("c2", HistorySearchArgs("ERR_LOCKED users"))
    assert found.ok and found.data["hits"][0] == 4 and "ERR_LOCKED on table users" in found.output
    assert not k.history_search("c3", HistorySearchArgs("  ")).ok
    with pytest.raises(ArgumentError, match="`query` is required"):
        parse_args(HistorySearchArgs, {})


def test_the_pinned_request_is_the_newest_user_message_with_the_turns_text() -> None:
    messages = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"},
                {"role": "user", "content": "a"}, {"role": "user", "content": "[continue] nudge"}]
    assert pinned_index(messages, "a") == 2 and pinned_index(messages, "zzz") == -1


def test_the_budget_follows_the_models_window_and_max_tokens_and_a_model_switch(tmp_path: Path) -> None:
    from services.loop.model.settings import ModelSettings

    small = OpenAIModelClient(ModelSettings(name="small", provider="generic", model="m", base_url="http://127.0.0.1:9/v1",
                                            api_key="k", context_window=16_000, max_tokens=2000))
    big = OpenAIModelClient(ModelSettings(name="big", provider="generic", model="m", base_url="http://127.0.0.1:9/v1",
                                          api_key="k", context_window=200_000))
    s = CompactionSettings(models={"big": {"threshold": 0.5}})
    k = ContextKeeper.create(s, small, "s1", str(tmp_path), {})
    assert (k.budget.window, k.budget.reserve, k.budget.ceiling) == (16_000, 2000, 12_800)
    k.set_model(big)
    assert (k.budget.window, k.budget.reserve, k.budget.ceiling) == (200_000, 20_000, 100_000)
