"""Giving back the memory of sessions dropped from the loop's memory.

A session's runtime and its features point at each other (each feature holds its host, the host its
features, tool handlers and event listeners are bound methods), so reference counting never frees an
evicted session: only a full cyclic collection does. CPython starts one only after a hundred young
collections and once the objects promoted since the last exceed a quarter of the oldest generation:
in the loop that left 200-300 dead sessions waiting beside the 100 live ones (``gc.DEBUG_SAVEALL``
at turn 1,000 of bench/footprint.py). That peak grew the small-object allocator's arenas, and an
arena that keeps one live object is never given back: the loop's RSS grew by 11 MB from turn 100
to turn 1,000 with the same 100 sessions open, while its live objects stayed flat.

:class:`Reclaimer` runs the collection itself once ``COLLECT_EVERY_EVICTIONS`` sessions, or sessions
holding ``COLLECT_EVERY_EVENTS`` events in their windows, were dropped (and on the idle sweep, for the
rest). The service's process entry (services.kernel.server.serve) moved what it built at start
(modules, descriptors, the config) to the permanent generation, which no collection walks: each one
walks the sessions alone (about 30,000 objects with 100 short sessions open instead of 80,000).
"""

from __future__ import annotations

import gc
import time

COLLECT_EVERY_EVICTIONS = 25
"""Dropped sessions that may wait for a collection: a quarter of the idle sessions kept (~2 MB of short
ones). A collection walks every live session (~30 ms of CPU with 100 open, on 2 shared cores), so one
per eviction would double what a short turn costs the loop; one per 25 adds about 0.5 ms to it."""
COLLECT_EVERY_EVENTS = 20_000
"""Events held by the dropped sessions that may wait (one full event window, ~4 MB): a session that
streamed long turns is given back without waiting for 24 more."""


class Reclaimer:
    """Counts dropped sessions (and their events) not collected yet, and collects past a bound."""

    def __init__(self) -> None:
        self.every = COLLECT_EVERY_EVICTIONS
        self.every_events = COLLECT_EVERY_EVENTS
        self.pending = 0
        self.pending_events = 0
        self.collections = 0
        self.cpu_seconds = 0.0
        """CPU the collections this ran took (the process's, so other threads' share is in it)."""

    def evicted(self, sessions: int, events: int) -> None:
        """``sessions`` holding ``events`` in their windows were dropped: collect when enough wait."""
        self.pending += sessions
        self.pending_events += events
        if self.pending >= self.every or self.pending_events >= self.every_events:
            self.collect()

    def idle(self) -> None:
        """The idle sweep found time: collect whatever waits."""
        if self.pending:
            self.collect()

    def collect(self) -> None:
        began = time.process_time()
        gc.collect()
        self.cpu_seconds += time.process_time() - began
        self.collections += 1
        self.pending = self.pending_events = 0
