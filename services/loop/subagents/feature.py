"""Subagents as a session feature: the ``subAgent`` tools, the runs table, /tasks, their approvals."""

from __future__ import annotations

from services.loop.core.approvals import Resolution
from services.loop.core.feature import Command, Feature, FeatureHost, RewindPoint
from services.loop.core.ports import ToolDef
from services.loop.core.sessions import Session
from services.loop.core.turn_events import EventBody, SubagentScope
from services.loop.subagents.apply_offer import OfferApply
from services.loop.subagents.child import ParentView
from services.loop.subagents.manager import SubagentLimits, SubagentManager


class SubagentsFeature(Feature):
    """The session's child runs; a background run keeps the session followed between turns."""

    name = "subagents"

    def __init__(self, host: FeatureHost) -> None:
        super().__init__()
        self.host = host
        self.manager = SubagentManager(host.session.id, host.session.workspace, self._parent_view, self._emit,
                                       self._limits, host.deps.model_for)
        # A child that changed files makes subagent_apply relevant: offered from the next step.
        self.manager.hooks.append(OfferApply(lambda names: host.tools.load(names)))

    def _emit(self, body: EventBody, scope: SubagentScope | None) -> None:
        self.host.emit_now(body, scope)

    def _parent_view(self) -> ParentView:
        """What a child takes from this session, read when it starts."""
        h = self.host
        return ParentView(h.session.id, h.session.workspace, h.settings, h.model, h.runner, h.instructions,
                          h.interactive, h.session.allowed_tools, h.gate, h.add_usage, h.deps.compaction,
                          h.deps.secret_env_names, hooks=h.hooks)

    def _limits(self) -> SubagentLimits:
        st = self.host.settings
        return SubagentLimits(st.subagent_timeout_seconds, st.subagent_max_iterations, st.subagent_token_budget,
                              st.max_parallel_subagents, st.subagent_isolation)

    def tools(self) -> list[ToolDef]:
        return self.manager.tool_defs()

    def commands(self) -> dict[str, Command]:
        async def tasks(args: str) -> tuple[str, str]:
            return self.manager.table.command(args)

        return {"tasks": tasks}

    def resolve(self, resolution: Resolution) -> bool:
        return self.manager.table.resolve(resolution)

    async def opened(self) -> None:
        await self.manager.clean_orphans()  # worktrees of a loop that crashed with children running

    def rewind(self, session: Session, point: RewindPoint) -> None:
        self.manager.table.forget_since(point.since)

    def busy(self) -> bool:
        return self.manager.table.running()

    async def shutdown(self) -> None:
        await self.manager.shutdown()
