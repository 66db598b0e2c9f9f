"""Hooks as a session feature: the turn's hook points, observe-only hooks, /hooks."""

from __future__ import annotations

import json
from typing import Any

from services.loop.core.events import Event
from services.loop.core.feature import Command, Feature, FeatureHost
from services.loop.hooks.engine import HookEngine
from services.loop.hooks.observers import ObservingHooks
from services.loop.subagents.feature import SubagentsFeature


class HooksFeature(Feature):
    """The user's hooks (``hooks`` section): the turn's ``TurnHooks`` and the observers of events
    and subagent runs."""

    name = "hooks"

    def __init__(self, host: FeatureHost) -> None:
        super().__init__()
        self.engine = HookEngine(host.deps.hooks, host.session.id, host.session.workspace)
        self.hooks = self.engine
        self.observing = ObservingHooks(self.engine, host.emit_now)
        subagents = host.feature(SubagentsFeature)
        if subagents is not None:
            subagents.manager.hooks.append(self.observing)

    def on_event(self, event: Event) -> None:
        self.observing.on_event(event)

    def commands(self) -> dict[str, Command]:
        async def hooks(args: str) -> tuple[str, str]:
            text, rows = self.engine.report()
            return text, json.dumps({"hooks": rows})

        return {"hooks": hooks}

    def reconfigure(self, deps: Any) -> None:
        self.engine.settings = deps.hooks
