"""What a session adds to each request besides the history: tail blocks and the MCP catalog.

The tail (memory constraints, task state; the pipeline adds compaction's part
and the environment) is sent after the history, so it changes without
breaking the cached prefix. The MCP catalog is fetched every step (a server
that reconnects is usable on the next one) and kept in the system message
(``instructions``): byte-stable across steps, and a changed tool set is one
declared cache break (a notice). Memory and the MCP gateway are auxiliary:
past ``AUXILIARY_TIMEOUT_S`` or on failure the turn goes on without their part
and reports a Degraded event (each failed MCP server once per session, a
failing gateway once per turn; the last catalog stays). What the catalog says
about permissions and full tool descriptions is kept for the gate
(``mcp_permissions``), ``mcp_describe`` (``mcp_described``) and ``mcp_call`` (``mcp_schemas``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from services.kernel.on_demand import START_WAIT_SECONDS
from services.loop.core.errors import AuxiliaryError
from services.loop.core.ports import McpClient, MemoryClient
from services.loop.core.tasks import TaskState, render_task_state
from services.loop.core.turn_events import Degraded, EventBody, Notice
from services.loop.turn.prompt import with_mcp_catalog

AUXILIARY_TIMEOUT_S = 1.5
OUTER_BOUND_S = AUXILIARY_TIMEOUT_S + 0.5 + START_WAIT_SECONDS
"""Past this, a memory or catalog call is abandoned whatever its adapter does: its own deadline, plus
the wait for a service started on demand by this very call (services/kernel/on_demand.py)."""

Emit = Callable[[EventBody], None]


class SessionTail:
    """One session's tail blocks and what the MCP catalog said about permissions."""

    def __init__(self, workspace: str, memory: MemoryClient | None, mcp: McpClient | None,
                 base_instructions: str) -> None:
        self.workspace = workspace
        self.memory = memory
        self.mcp = mcp
        self.base_instructions = base_instructions
        self.instructions = base_instructions
        """The system message: the base instructions with the last MCP catalog."""
        self.mcp_catalog: str | None = None
        """The catalog in the system message; None before the first."""
        self.mcp_permissions: dict[str, str] = {}
        """``server__tool`` -> "allow" / "warn" / "deny", from the last catalog."""
        self.mcp_described: dict[str, str] = {}
        self.mcp_schemas: dict[str, dict[str, Any]] = {}
        """``server__tool`` -> what ``mcp_describe`` answers (full description and input schema)."""
        self._reported: set[str] = set()
        self._gateway_reported = False

    def set_base(self, base_instructions: str) -> None:
        """New base instructions (the skill catalog changed); the MCP catalog stays the last block."""
        self.base_instructions = base_instructions
        self.instructions = with_mcp_catalog(base_instructions, self.mcp_catalog or "")

    async def turn_parts(self, emit: Emit) -> dict[str, str]:
        """Blocks that hold for the whole turn: the memory constraints."""
        self._gateway_reported = False
        if self.memory is None:
            return {}
        try:
            block = await asyncio.wait_for(self.memory.constraints(self.workspace, 0, AUXILIARY_TIMEOUT_S),
                                           OUTER_BOUND_S)
        except (AuxiliaryError, TimeoutError) as err:
            emit(Degraded(component="memory_constraints", reason=_why(err)))
            return {}
        return {"memory-constraints": untag(block, "memory-constraints")}

    async def step_parts(self, emit: Emit, tasks: TaskState) -> dict[str, str]:
        """Refresh the MCP catalog, then the blocks fetched for every step (the task state)."""
        await self._refresh_mcp(emit)
        block = render_task_state(tasks)
        return {"task-state": untag(block, "task-state")} if block else {}

    async def _refresh_mcp(self, emit: Emit) -> None:
        if self.mcp is None:
            return
        if not self.mcp.wanted():  # no server anywhere: an empty catalog, without starting a gateway
            self.mcp_permissions, self.mcp_described, self.mcp_schemas = {}, {}, {}
            self._place_catalog("", emit)
            return
        try:
            catalog = await asyncio.wait_for(self.mcp.catalog(AUXILIARY_TIMEOUT_S), OUTER_BOUND_S)
        except (AuxiliaryError, TimeoutError) as err:
            if not self._gateway_reported:
                self._gateway_reported = True
                emit(Degraded(component="mcp_catalog", reason=_why(err)))
            return
        self.mcp_permissions = catalog.permissions
        self.mcp_described = catalog.described
        self.mcp_schemas = catalog.schemas
        for server, why in catalog.degraded.items():
            if server not in self._reported:
                self._reported.add(server)
                emit(Degraded(component=f"mcp:{server}", reason=why))
        self._place_catalog(untag(catalog.text, "mcp-catalog"), emit)

    def _place_catalog(self, catalog: str, emit: Emit) -> None:
        """Put ``catalog`` in the system message; a change after the first request is a declared cache break."""
        if catalog == self.mcp_catalog:
            return
        before, self.mcp_catalog = self.mcp_catalog, catalog
        self.instructions = with_mcp_catalog(self.base_instructions, catalog)
        if before is not None:
            emit(Notice(level="info", text=f"the MCP tool set changed ({len(before)} -> {len(catalog)} catalog "
                                            "bytes): the system message changes, so the prompt cache restarts"))


def untag(block: str, tag: str) -> str:
    """The body of ``<tag>...</tag>`` (tail_blocks puts the tags back)."""
    return block.strip().removeprefix(f"<{tag}>").removesuffix(f"</{tag}>").strip()


def _why(err: Exception) -> str:
    return err.detail if isinstance(err, AuxiliaryError) else "timed out"
