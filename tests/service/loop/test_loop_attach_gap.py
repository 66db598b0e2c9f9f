"""Re-attaching past the loop's event window: the client is told what it missed, then gets the rest once."""

from __future__ import annotations

from collections.abc import Callable

from ai_coding.v1 import loop_pb2

from tests.service.loop.harness import EVENT_TIMEOUT_S, LoopStack, finished, status_name

WINDOW = 50
LONG_TEXT = "the quick brown fox jumps over the lazy dog. " * 8  # 360 chars


def skipped(event: loop_pb2.TurnEvent) -> loop_pb2.EventsSkipped:
    assert event.WhichOneof("event") == "events_skipped", event
    return event.events_skipped


def test_a_client_attaching_mid_turn_from_an_old_seq_is_told_the_gap_then_gets_each_later_event_once(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([{"match": "tell", "text": LONG_TEXT, "chunk_chars": 2, "chunk_delay_ms": 15}],
                       loop={"event_window": WINDOW})
    sid = stack.open().session_id
    first = stack.start(sid, "tell me a story")
    for seen, _event in enumerate(first, start=1):
        if seen == WINDOW + 20:  # the window has moved past the start of the turn
            first.cancel()
            break
    rest = stack.attach(sid, after_seq=3).drain()
    gap = skipped(rest[0])
    assert gap.from_seq == 4 and rest[0].seq == gap.to_seq >= WINDOW + 20 - WINDOW
    assert "saved session" in gap.hint and sid in gap.hint
    later = [e.seq for e in rest[1:]]
    assert later == list(range(gap.to_seq + 1, gap.to_seq + 1 + len(later)))  # no gap, no duplicate
    assert "events_skipped" not in [e.WhichOneof("event") for e in rest[1:]]
    assert status_name(finished(rest)) == "completed"
    assert later[-1] == stack.open(sid).last_seq


def test_after_the_turn_both_streams_start_with_the_gap_and_end_at_the_last_event(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([{"match": "tell", "text": LONG_TEXT, "chunk_chars": 3}], loop={"event_window": WINDOW})
    sid, events = stack.turn("tell me a story")
    assert status_name(finished(events)) == "completed"
    last = stack.open(sid).last_seq
    assert last > WINDOW
    oldest_held = last - WINDOW + 1

    single = stack.attach(sid, after_seq=0).drain()
    gap = skipped(single[0])
    assert (gap.from_seq, gap.to_seq, single[0].seq) == (1, oldest_held - 1, oldest_held - 1)
    assert [e.seq for e in single[1:]] == list(range(oldest_held, last + 1))

    attach = loop_pb2.ClientMessage(attach=loop_pb2.AttachTurn(session_id=sid, after_seq=10))
    batches = list(stack.stub.ConverseBatched(iter([attach]), timeout=EVENT_TIMEOUT_S))
    flat = [e for b in batches for e in b.events]
    assert [e.WhichOneof("event") for e in batches[0].events] == ["events_skipped"]
    assert (skipped(flat[0]).from_seq, skipped(flat[0]).to_seq) == (11, oldest_held - 1)
    assert [e.seq for e in flat[1:]] == list(range(oldest_held, last + 1))


def test_a_client_inside_the_window_gets_no_gap_event(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([{"match": "tell", "text": LONG_TEXT, "chunk_chars": 3}], loop={"event_window": WINDOW})
    sid, _events = stack.turn("tell me a story")
    last = stack.open(sid).last_seq
    rest = stack.attach(sid, after_seq=last - 5).drain()
    assert [e.seq for e in rest] == list(range(last - 4, last + 1))
    assert "events_skipped" not in [e.WhichOneof("event") for e in rest]
