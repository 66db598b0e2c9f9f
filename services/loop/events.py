"""Per-session event log: numbered events, fan-out to attached clients, re-attach.

Every event a session emits gets the next sequence number and is kept in a
bounded in-memory window. A client follows the log from a sequence number it
already saw; followers pull from the window instead of owning queues, so an
event is delivered to each follower exactly once and in order, and a client
that disconnects and re-attaches with its last number misses nothing that is
still in the window. A follower whose next number is older than the window
(a late re-attach, a reader slower than the window, or a loop restarted since)
first gets one ``events_skipped`` event that names the gap, never a silent one.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

# A turn of a busy session emits a few thousand events (mostly text deltas);
# the window keeps several turns so a late re-attach is still served, while 50
# open sessions stay within ~200 MB even with full windows (~200 B per event).
DEFAULT_WINDOW = 20_000
SKIPPED_HINT = ("the loop keeps only the newest events of a session; the saved session holds the full "
                "conversation (/resume {short} redraws it; file .ai-coding/sessions/{session}.json)")


@dataclass(frozen=True)
class Event:
    """One turn event. ``kind`` names the TurnEvent oneof field (e.g. ``"text_delta"``);
    ``data`` holds that message's fields by their proto names (convert.py maps it)."""

    seq: int
    session_id: str
    turn: int
    ts: float
    kind: str
    data: dict[str, Any] = field(default_factory=dict)


class EventLog:
    """The numbered event stream of one session."""

    def __init__(self, session_id: str, last_seq: int = 0, window: int = DEFAULT_WINDOW) -> None:
        self.session_id = session_id
        self._last_seq = last_seq
        self._events: deque[Event] = deque(maxlen=window)
        self._changed = asyncio.Event()
        self._listeners: list[Callable[[Event], None]] = []

    @property
    def last_seq(self) -> int:
        """The number of the newest event issued (0 when none)."""
        return self._last_seq

    def add_listener(self, listener: Callable[[Event], None]) -> None:
        """Call ``listener`` synchronously for every new event (traces use this)."""
        self._listeners.append(listener)

    def emit(self, kind: str, turn: int, /, **data: Any) -> Event:
        """Append an event with the next sequence number and wake every follower."""
        self._last_seq += 1
        event = Event(self._last_seq, self.session_id, turn, time.time(), kind, data)
        self._events.append(event)
        for listener in self._listeners:
            listener(event)
        self.wake()
        return event

    def wake(self) -> None:
        """Wake followers so they re-check their stop condition."""
        self._changed.set()
        self._changed = asyncio.Event()

    def since(self, after_seq: int) -> list[Event]:
        """Events with ``seq > after_seq`` still in the window, oldest first."""
        if not self._events or after_seq >= self._last_seq:
            return []
        first = self._events[0].seq
        start = max(0, after_seq + 1 - first)
        return [self._events[i] for i in range(start, len(self._events))]

    def oldest_seq(self) -> int:
        """Sequence number of the oldest event still held (last_seq + 1 when empty)."""
        return self._events[0].seq if self._events else self._last_seq + 1

    def skipped_after(self, after_seq: int) -> Event | None:
        """The ``events_skipped`` event a follower at ``after_seq`` must see first, or None.

        Not part of the log (no number of its own, no listener sees it): its seq is the
        last missing number, so a follower's cursor moves past the gap."""
        gap = skipped_range(after_seq, self.oldest_seq(), self._last_seq)
        if gap is None:
            return None
        turn = self._events[0].turn if self._events else 0
        hint = SKIPPED_HINT.format(short=self.session_id[:8], session=self.session_id)
        return Event(gap[1], self.session_id, turn, time.time(), "events_skipped",
                     {"from_seq": gap[0], "to_seq": gap[1], "hint": hint})

    async def follow(self, after_seq: int, done: Callable[[], bool]) -> AsyncIterator[Event]:
        """Every event after ``after_seq``, then live ones, until ``done()`` holds
        with nothing left to deliver."""
        async for batch in self.follow_batches(after_seq, done, max_batch=1):
            for event in batch:
                yield event

    async def follow_batches(self, after_seq: int, done: Callable[[], bool], max_batch: int = 512
                             ) -> AsyncIterator[list[Event]]:
        """Like :meth:`follow`, but yields every ready event at once (at most ``max_batch``)."""
        cursor = after_seq
        while True:
            changed = self._changed
            skipped = self.skipped_after(cursor)
            if skipped is not None:
                cursor = skipped.seq
                yield [skipped]
            ready = self.since(cursor)
            for start in range(0, len(ready), max_batch):
                batch = ready[start : start + max_batch]
                cursor = batch[-1].seq
                yield batch
            if ready:
                continue
            if done():
                return
            await changed.wait()


def skipped_range(after_seq: int, oldest_seq: int, last_seq: int) -> tuple[int, int] | None:
    """The numbers (first, last) a follower at ``after_seq`` can no longer get, or None.

    ``oldest_seq`` is the oldest number still held (``last_seq + 1`` when none is)."""
    first = after_seq + 1
    last = min(oldest_seq - 1, last_seq)
    return (first, last) if first <= last else None
