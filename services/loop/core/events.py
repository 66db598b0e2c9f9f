"""Per-session event log: numbered events, fan-out to attached clients, re-attach.

Every event a session emits gets the next sequence number and is kept in a
bounded in-memory window. A client follows the log from a sequence number it
already saw; followers pull from the window instead of owning queues, so an
event is delivered to each follower exactly once and in order, and a client
that disconnects and re-attaches with its last number misses nothing that is
still in the window. A follower whose next number is older than the window
(a late re-attach, a reader slower than the window, or a loop restarted since)
first gets one ``events_skipped`` event that names the gap, never a silent one.

Numbers are never reused, even by a loop that restarts after a crash: before
a number is issued, a block of them is reserved on disk (``reserve``), and a
log resumed from disk continues past the last reservation. Otherwise a client
holding number 130 when the loop died would, after a restart that resumed at
the last saved number (say 100), silently drop the next turn's first 30 events
as ones it had already seen.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from services.loop.core.turn_events import EventBody, EventsSkipped, SubagentScope
from services.loop.policy.settings import DEFAULT_WINDOW

# Numbers reserved on disk at a time: one small file write per this many events.
SEQ_BLOCK = 10_000
SKIPPED_HINT = ("the loop keeps only the newest events of a session; the saved session holds the full "
                "conversation (/resume {short} redraws it; `ai-coding sessions show {session}` prints it)")


@dataclass(frozen=True)
class Event:
    """One numbered turn event: the envelope (seq, session, turn, time) around a typed
    payload from services/loop/core/turn_events.py (convert.py maps it by type)."""

    seq: int
    session_id: str
    turn: int
    ts: float
    body: EventBody
    scope: SubagentScope | None = None
    """Set on a subagent child's events relayed into its parent's log."""

    @property
    def kind(self) -> str:
        """The TurnEvent oneof field name of the payload (e.g. ``"text_delta"``)."""
        return self.body.kind

    @property
    def data(self) -> dict[str, Any]:
        """The payload's fields by name (read-only use: traces, tests)."""
        return self.body.fields()


class EventLog:
    """The numbered event stream of one session."""

    def __init__(self, session_id: str, last_seq: int = 0, window: int = DEFAULT_WINDOW, *,
                 reserve: Callable[[int], None] | None = None, unissued: tuple[int, int] = (0, 0)) -> None:
        """``reserve(n)`` must record durably that numbers up to ``n`` may be issued (it is
        called before the first of them is); ``unissued`` = (lo, hi): a resumed log's numbers
        lo < n <= hi, which an earlier run may or may not have issued before it stopped."""
        self.session_id = session_id
        self._last_seq = last_seq
        self._reserved = last_seq
        self._reserve = reserve
        self._unissued = unissued
        self._events: deque[Event] = deque(maxlen=window)
        self._changed = asyncio.Event()
        self._listeners: list[Callable[[Event], None]] = []

    @property
    def last_seq(self) -> int:
        """The number of the newest event issued (0 when none)."""
        return self._last_seq

    @property
    def held(self) -> int:
        """How many events the window holds now."""
        return len(self._events)

    def add_listener(self, listener: Callable[[Event], None]) -> None:
        """Call ``listener`` synchronously for every new event (traces use this)."""
        self._listeners.append(listener)

    def emit(self, turn: int, body: EventBody, scope: SubagentScope | None = None) -> Event:
        """Append ``body`` as an event of ``turn`` with the next sequence number and wake
        every follower (``scope``: the subagent child it comes from)."""
        if self._reserve is not None and self._last_seq + 1 > self._reserved:
            self._reserved = self._last_seq + SEQ_BLOCK
            self._reserve(self._reserved)
        self._last_seq += 1
        event = Event(self._last_seq, self.session_id, turn, time.time(), body, scope)
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
        gap = skipped_range(after_seq, self.oldest_seq(), self._last_seq, self._unissued)
        if gap is None:
            return None
        turn = self._events[0].turn if self._events else 0
        hint = SKIPPED_HINT.format(short=self.session_id[:8], session=self.session_id)
        return Event(gap[1], self.session_id, turn, time.time(), EventsSkipped(gap[0], gap[1], hint))

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


def skipped_range(after_seq: int, oldest_seq: int, last_seq: int, unissued: tuple[int, int] = (0, 0)
                  ) -> tuple[int, int] | None:
    """The numbers (first, last) a follower at ``after_seq`` can no longer get, or None.

    ``oldest_seq`` is the oldest number still held (``last_seq + 1`` when none is). Numbers in
    ``unissued`` (lo, hi] were reserved by an earlier run of the loop but perhaps never issued:
    a gap that ends among them is reported only up to ``lo`` (what was surely issued and saved),
    and one that lies wholly among them is no gap."""
    first = after_seq + 1
    last = min(oldest_seq - 1, last_seq)
    lo, hi = unissued
    if last <= hi:
        last = min(last, lo)
    return (first, last) if first <= last else None


def resume_point(saved_seq: int, reserved: int | None) -> tuple[int, tuple[int, int]]:
    """Where a log loaded from disk continues, and its ``unissued`` range (pure).

    Numbers past the last saved one may have reached a client before the loop stopped; they
    were reserved on disk first, so the log continues past the reservation. Without a readable
    reservation (a session written by an older version, a damaged file) one block past the
    saved number is assumed."""
    if reserved is None:
        reserved = saved_seq + SEQ_BLOCK if saved_seq else 0
    start = max(saved_seq, reserved)
    return start, (saved_seq, start)
