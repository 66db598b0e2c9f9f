"""The event log names the events a follower can no longer get instead of skipping them silently."""

from __future__ import annotations

import asyncio

from services.loop.core.events import Event, EventLog, skipped_range
from services.loop.core.turn_events import Notice


def test_no_gap_when_the_follower_is_inside_the_window_or_ahead() -> None:
    assert skipped_range(after_seq=0, oldest_seq=1, last_seq=5) is None
    assert skipped_range(after_seq=7, oldest_seq=8, last_seq=20) is None
    assert skipped_range(after_seq=20, oldest_seq=8, last_seq=20) is None
    assert skipped_range(after_seq=25, oldest_seq=8, last_seq=20) is None


def test_the_gap_runs_from_the_next_number_to_just_before_the_oldest_held() -> None:
    assert skipped_range(after_seq=3, oldest_seq=11, last_seq=20) == (4, 10)
    # A log reopened at seq 40 holds nothing yet: everything after the follower is gone.
    assert skipped_range(after_seq=10, oldest_seq=41, last_seq=40) == (11, 40)


async def _collect(log: EventLog, after_seq: int, max_batch: int = 512) -> list[Event]:
    out: list[Event] = []
    async for batch in log.follow_batches(after_seq, lambda: True, max_batch):
        out.extend(batch)
    return out


def test_a_late_follower_gets_one_skipped_event_then_every_held_event_once() -> None:
    async def scenario() -> list[Event]:
        log = EventLog("s1", window=5)
        for n in range(12):
            log.emit(1, Notice(level="info", text=str(n)))
        return await _collect(log, after_seq=2, max_batch=1)

    events = asyncio.run(scenario())
    assert events[0].kind == "events_skipped"
    assert (events[0].data["from_seq"], events[0].data["to_seq"], events[0].seq) == (3, 7, 7)
    assert "saved session" in events[0].data["hint"]
    assert [e.seq for e in events[1:]] == [8, 9, 10, 11, 12]
    assert all(e.kind == "notice" for e in events[1:])


def test_a_follower_inside_the_window_gets_no_skipped_event() -> None:
    async def scenario() -> list[Event]:
        log = EventLog("s1", window=5)
        for n in range(12):
            log.emit(1, Notice(level="info", text=str(n)))
        return await _collect(log, after_seq=7)

    assert [e.kind for e in asyncio.run(scenario())] == ["notice"] * 5


def test_a_reader_slower_than_the_window_is_told_about_the_gap_mid_stream() -> None:
    async def scenario() -> list[Event]:
        log = EventLog("s1", window=4)
        for n in range(3):
            log.emit(1, Notice(level="info", text=str(n)))
        seen: list[Event] = []
        finished = [False]
        async for batch in log.follow_batches(0, lambda: finished[0], max_batch=512):
            seen.extend(batch)
            if len(seen) == 3:  # while this reader is busy, ten more events overrun its window
                for n in range(10):
                    log.emit(1, Notice(level="info", text=f"late {n}"))
                finished[0] = True
        return seen

    events = asyncio.run(scenario())
    assert [e.seq for e in events[:3]] == [1, 2, 3]
    assert events[3].kind == "events_skipped" and (events[3].data["from_seq"], events[3].data["to_seq"]) == (4, 9)
    assert [e.seq for e in events[4:]] == [10, 11, 12, 13]


def test_the_skipped_event_is_not_logged_and_not_seen_by_listeners() -> None:
    async def scenario() -> tuple[list[Event], int]:
        log = EventLog("s1", last_seq=40, window=5)
        heard: list[Event] = []
        log.add_listener(heard.append)
        events = await _collect(log, after_seq=10)
        return heard + events[1:], log.last_seq

    extra, last_seq = asyncio.run(scenario())
    assert extra == [] and last_seq == 40
