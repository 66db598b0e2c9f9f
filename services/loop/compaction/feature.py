"""Compaction as a session feature: the context window of every turn, its tools, /compact and /budget."""

from __future__ import annotations

from typing import Any

from services.loop.compaction.command import budget_command, compact_command
from services.loop.compaction.keeper import AFTER_COMPACTION, ContextKeeper
from services.loop.compaction.state import CompactionState
from services.loop.core.feature import Command, Feature, FeatureHost, RewindPoint, StateSlot
from services.loop.core.ports import ModelClient, ToolDef
from services.loop.core.sessions import Session

COMPACTION = StateSlot[CompactionState]("compaction", decode=CompactionState.from_json,
                                        encode=lambda state: state.to_json())
"""What compaction decided (the messages stay whole)."""
DIGESTS = StateSlot[list[str]]("turnDigests", decode=lambda raw: [str(d) for d in raw] if isinstance(raw, list)
                               else [], encode=list)
"""The working-memory ring: one line per finished turn."""


class CompactionFeature(Feature):
    """The session's ``ContextKeeper``: it views the history a request sends, compacts it and keeps
    its decisions in the session record (``compaction``, ``turnDigests``)."""

    name = "compaction"
    slots: tuple[StateSlot[Any], ...] = (COMPACTION, DIGESTS)

    def __init__(self, host: FeatureHost) -> None:
        super().__init__()
        self.host = host
        session = host.session
        self.keeper = ContextKeeper.create(host.deps.compaction, host.model, session.id, session.workspace,
                                           session.meta(), host.deps.memory)
        self.context = self.keeper
        dropped = self.keeper.check(session.messages)
        if dropped:
            self.warnings.append(f"compaction: {dropped}")

    def tools(self) -> list[ToolDef]:
        return self.keeper.tool_defs()

    def installed(self) -> None:
        self.keeper.reveal = self.host.tools.load
        if self.keeper.archived_something():
            self.host.tools.load(AFTER_COMPACTION)

    def commands(self) -> dict[str, Command]:
        async def compact(args: str) -> tuple[str, str]:
            return await compact_command(self.host, self.keeper)

        async def budget(args: str) -> tuple[str, str]:
            return budget_command(self.host, self.keeper)

        return {"compact": compact, "budget": budget}

    def before_save(self) -> None:
        COMPACTION.write(self.host.session, self.keeper.state)
        DIGESTS.write(self.host.session, list(self.keeper.digests))

    def rewind(self, session: Session, point: RewindPoint) -> None:
        super().rewind(session, point)
        self.keeper.rewound(COMPACTION.read(session), DIGESTS.read(session))

    def reconfigure(self, deps: Any) -> None:
        self.keeper.reconfigure(deps.compaction, self.host.model)

    def model_changed(self, model: ModelClient) -> None:
        self.keeper.set_model(model)  # its window sets the compaction budget from now on
