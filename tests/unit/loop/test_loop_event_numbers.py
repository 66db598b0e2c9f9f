"""Event numbers are never reused across a loop restart: reservation before issue, resume past it."""

from __future__ import annotations

import asyncio

from services.loop.core.events import SEQ_BLOCK, EventLog, resume_point, skipped_range
from services.loop.core.turn_events import TextDelta


def test_a_block_of_numbers_is_reserved_before_the_first_of_them_is_issued() -> None:
    reserved: list[tuple[int, int]] = []
    log: EventLog

    def reserve(mark: int) -> None:
        reserved.append((mark, log.last_seq))  # what had been issued when the reservation was asked

    log = EventLog("s", 0, reserve=reserve)
    log.emit(1, TextDelta(text="a"))
    assert reserved == [(SEQ_BLOCK, 0)]
    for _ in range(SEQ_BLOCK - 1):
        log.emit(1, TextDelta(text="b"))
    assert log.last_seq == SEQ_BLOCK and len(reserved) == 1  # one write per block, not per event
    log.emit(1, TextDelta(text="c"))
    assert reserved[-1] == (2 * SEQ_BLOCK, SEQ_BLOCK)


def test_a_resumed_log_continues_past_the_reservation_not_the_last_saved_number() -> None:
    assert resume_point(100, 10_000) == (10_000, (100, 10_000))
    # A reservation older than the save (cannot happen normally) never moves numbering back.
    assert resume_point(12_000, 10_000) == (12_000, (12_000, 12_000))


def test_without_a_readable_reservation_one_block_past_the_save_is_assumed() -> None:
    assert resume_point(100, None) == (100 + SEQ_BLOCK, (100, 100 + SEQ_BLOCK))
    assert resume_point(0, None) == (0, (0, 0))  # a new session starts at zero


def test_numbers_that_were_only_reserved_are_not_reported_as_skipped() -> None:
    # Saved up to 100, reserved to 10,000, nothing issued since the restart: a client at 130
    # missed nothing the log could ever give it.
    assert skipped_range(130, 10_001, 10_000, (100, 10_000)) is None
    # A client at 50 missed 51..100, which were issued and saved before the restart.
    assert skipped_range(50, 10_001, 10_000, (100, 10_000)) == (51, 100)
    # Without a restart the plain window rule holds.
    assert skipped_range(10, 500, 900) == (11, 499)


def test_a_follower_from_before_a_restart_receives_every_new_event_in_order() -> None:
    async def run() -> list[int]:
        start, unissued = resume_point(100, 10_000)
        log = EventLog("s", start, unissued=unissued)
        for n in range(5):
            log.emit(2, TextDelta(text=str(n)))
        got: list[int] = []
        async for event in log.follow(130, lambda: True):
            got.append(event.seq)
        return got

    assert asyncio.run(run()) == [10_001, 10_002, 10_003, 10_004, 10_005]
