"""Resumable Streamable HTTP for ``ai-coding mcp serve --http``: a bounded in-memory event store.

A task runs for minutes; a caller whose SSE stream drops reconnects with ``Last-Event-ID`` and gets
the progress and the result it missed (SEP-1699). Only the newest :data:`KEEP` events are kept:
older ones are gone, and a reconnect that asks for one of them gets nothing replayed.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.types import JSONRPCMessage

KEEP = 2000


class MemoryEventStore(EventStore):
    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._ids = itertools.count(1)
        self._events: OrderedDict[str, tuple[StreamId, JSONRPCMessage | None]] = OrderedDict()

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = str(next(self._ids))
        self._events[event_id] = (stream_id, message)
        while len(self._events) > self.keep:
            self._events.popitem(last=False)
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        if last_event_id not in self._events:
            return None
        stream_id = self._events[last_event_id][0]
        after = False
        for event_id, (stream, message) in list(self._events.items()):
            if after and stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
            after = after or event_id == last_event_id
        return stream_id
