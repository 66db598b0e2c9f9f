"""The memory harvest as a session feature: after a user turn, offer its new messages to memory
(one extra model call, in the background; ``loop.harvest``)."""

from __future__ import annotations

import asyncio

from services.loop.core.feature import Feature, FeatureHost
from services.loop.harvest.extract import harvest_quietly
from services.loop.hooks.config import HookPoint
from services.loop.hooks.feature import HooksFeature


class HarvestFeature(Feature):
    """At most one harvest runs at a time; the session's ``harvestCursor`` marks what was offered."""

    name = "harvest"

    def __init__(self, host: FeatureHost) -> None:
        super().__init__()
        self.host = host
        self.task: asyncio.Task[None] | None = None

    def after_turn(self) -> None:
        host, deps = self.host, self.host.deps
        memory = deps.memory
        if not deps.harvest or memory is None or self.task is not None:
            return
        session = host.session
        start, messages = session.harvest_cursor, list(session.messages)
        if start >= len(messages):
            return
        hooks = host.feature(HooksFeature)

        async def run() -> None:
            try:
                if hooks is not None:
                    await hooks.engine.observe(HookPoint.MEMORY_HARVEST, {"from_message": start, "messages": len(messages)},
                                               host.emit_now)
                ok = await harvest_quietly(host.model, memory, session.workspace, session.id, messages, start,
                                           deps.harvest_timeout_seconds)
                if ok:
                    session.harvest_cursor = len(messages)
                    host.save()
            finally:
                self.task = None

        self.task = asyncio.create_task(run())

    async def shutdown(self) -> None:
        if self.task is not None:
            self.task.cancel()
