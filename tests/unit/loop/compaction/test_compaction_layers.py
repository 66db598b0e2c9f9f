"""L3, L1, L2 and the fallback trim: pure functions over the record, which they never change."""

from __future__ import annotations

import copy
from pathlib import Path

from services.loop.compaction.layers import hard_trim, l1_snip, l2_envelopes, l3_persist
from services.loop.compaction.settings import CompactionSettings
from services.loop.compaction.state import Checkpoint, CompactionState, build_view
from services.loop.compaction.transcripts import Transcripts
from services.loop.core.pairing import is_paired

from .helpers import exchange, history, inputs


def test_l3_persists_only_big_results_of_the_trailing_batch_when_the_batch_is_over_half_the_window(
        tmp_path: Path) -> None:
    messages = history(2, 500)[:-1]  # ends with a tool result
    big = "B" * 70_000
    messages += [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "x1", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
        {"id": "x2", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "x1", "content": big}, {"role": "tool", "tool_call_id": "x2", "content": "small"}]
    record = copy.deepcopy(messages)
    state, stat = l3_persist(inputs(messages, tmp_path, window=32000), CompactionState())
    assert (stat.rewritten, stat.skipped) == (1, 1)
    view = build_view(messages, state)
    placeholder = view[-2]["content"]
    assert placeholder.startswith("<persisted-output path=\".ai-coding/transcripts/persisted/")
    path = placeholder.split('"')[1]
    assert (tmp_path / path).read_text() == big
    assert view[-1]["content"] == "small"
    assert messages == record  # the record is untouched


def test_l3_does_nothing_when_the_turn_ended_on_an_answer_or_the_batch_is_small(tmp_path: Path) -> None:
    messages = history(1, 500)
    messages[-2]["content"] = "C" * 70_000  # a huge result, but not trailing: the answer came after it
    state, stat = l3_persist(inputs(messages, tmp_path), CompactionState())
    assert state.overlays == {} and (stat.rewritten, stat.skipped) == (0, 0)
    small = history(1, 40_000)[:-1]  # trailing and > 30000 bytes, but 10k tokens < half of a 32k window
    state, stat = l3_persist(inputs(small, tmp_path), CompactionState())
    assert state.overlays == {} and stat.skipped == 1


def test_l1_snips_the_middle_keeping_head_and_tail_and_archives_what_it_hides(tmp_path: Path) -> None:
    s = CompactionSettings(max_messages=40, snip_keep_head=3, snip_keep_tail=10)
    messages = history(30, 100)  # 62 messages
    inp = inputs(messages, tmp_path, settings=s)
    state, stat = l1_snip(inp, CompactionState())
    assert stat is not None
    view = build_view(messages, state)
    assert view[:3] == messages[:3]
    marker = next(m for m in view if str(m["content"]).startswith("[snipped "))
    hidden = state.omissions[0].end - state.omissions[0].start
    assert marker["content"].startswith(f"[snipped {hidden} messages]")
    assert view[-10:] == messages[-10:] and is_paired(view)
    archived = [record["index"] for record in Transcripts(tmp_path).records("s1")]
    assert archived == list(range(state.omissions[0].start, state.omissions[0].end))


def test_l1_does_not_run_once_a_checkpoint_exists(tmp_path: Path) -> None:
    s = CompactionSettings(max_messages=40, snip_keep_head=3, snip_keep_tail=10)
    messages = history(30, 100)
    with_checkpoint = CompactionState(checkpoint=Checkpoint("sum", 1, "a", (1,)))
    state, stat = l1_snip(inputs(messages, tmp_path, settings=s), with_checkpoint)
    assert stat is None and state is with_checkpoint


def test_l2_envelopes_old_results_with_content_addressed_bodies_and_keeps_the_recent_ones(tmp_path: Path) -> None:
    s = CompactionSettings(keep_recent_tool_results=2, keep_recent_tool_tokens=10**9, l2_window_chars=50,
                           l2_window_budget=1000)  # the count decides here, not the token budget
    messages = history(5, 3000)
    messages[2]["content"] = messages[4]["content"]  # two results with the same body
    messages[6]["content"] = "tiny"  # shorter than an envelope: stays
    state, stat = l2_envelopes(inputs(messages, tmp_path, settings=s), CompactionState())
    view = build_view(messages, state)
    tools = [i for i, m in enumerate(messages) if m["role"] == "tool"]
    assert [view[i]["content"] == messages[i]["content"] for i in tools] == [False, False, True, True, True]
    assert (stat.rewritten, stat.skipped) == (2, 1)
    envelope = view[tools[0]]["content"]
    assert envelope.startswith(f"[elided: {len(messages[tools[0]]['content'])} chars cleared; the full output is in "
                               ".ai-coding/transcripts/elided/")
    assert len(list((tmp_path / ".ai-coding/transcripts/elided").iterdir())) == 1  # one body, written once
    assert messages[tools[0]]["content"][:50] in envelope and messages[tools[0]]["content"][-50:] in envelope


def test_an_enveloped_output_is_found_by_history_search_by_a_word_only_its_body_has(tmp_path: Path) -> None:
    s = CompactionSettings(keep_recent_tool_results=1, l2_window_chars=50, l2_window_budget=1000)
    messages = history(3, 3000)
    tools = [i for i, m in enumerate(messages) if m["role"] == "tool"]
    messages[tools[0]]["content"] = "x" * 1500 + " ERR_QUOTA_7731 in the middle " + "y" * 1500
    state, _ = l2_envelopes(inputs(messages, tmp_path, settings=s), CompactionState())
    assert "ERR_QUOTA_7731" not in build_view(messages, state)[tools[0]]["content"]  # elided
    found = Transcripts(tmp_path).search("s1", "ERR_QUOTA_7731", 1)
    assert [f.index for f in found] == [tools[0]] and "ERR_QUOTA_7731" in found[0].text
    l2_envelopes(inputs(messages, tmp_path, settings=s), state)  # the next step: archived once, not again
    assert len(Transcripts(tmp_path).records("s1")) == len(tools) - 1


def test_l2_window_budget_goes_to_the_newest_envelopes_first(tmp_path: Path) -> None:
    s = CompactionSettings(keep_recent_tool_results=0, l2_window_chars=100, l2_window_budget=300)
    messages = history(4, 3000)
    state, _ = l2_envelopes(inputs(messages, tmp_path, settings=s), CompactionState())
    view = build_view(messages, state)
    sizes = [len(view[i]["content"]) for i, m in enumerate(messages) if m["role"] == "tool"]
    assert sizes[3] > sizes[2] > sizes[1] == sizes[0]  # 200 + 100 + 0 + 0 window chars


def test_the_fallback_trim_keeps_the_note_the_pinned_request_and_the_last_exchange(tmp_path: Path) -> None:
    messages = history(20, 4000)
    messages += [{"role": "user", "content": "now also update the docs"}, *exchange(99, "last output")]
    pinned = len(messages) - 3
    state = CompactionState(checkpoint=Checkpoint("earlier work", 1, "a", (1,)))
    inp = inputs(messages, tmp_path, pinned=pinned)
    new, stat = hard_trim(inp, state, goal=3000)
    assert stat is not None
    view = build_view(messages, new)
    assert view[0]["content"].startswith("[checkpoint]")
    assert view[1]["content"].startswith("[context overflow] ") and "use history_search" in view[1]["content"]
    assert messages[pinned] in view and view[-2:] == messages[-2:]
    assert inp.tokens(new) <= 3000 and is_paired(view)


def test_the_archive_reads_back_text_with_newlines_and_ignores_a_torn_tail(tmp_path: Path) -> None:
    t = Transcripts(tmp_path)
    messages = [{"role": "tool", "content": "line 1\n3 tool 99\nnot a header"}, {"role": "user", "content": "ü ok"}]
    assert t.archive("s1", messages, range(2)) == 2 and t.archive("s1", messages, range(2)) == 0
    with open(t.archive_path("s1"), "a") as fh:
        fh.write("7 tool 500\ncut off by a ki")
    assert [(r["index"], r["text"]) for r in Transcripts(tmp_path).records("s1")] == [
        (0, messages[0]["content"]), (1, "ü ok")]
