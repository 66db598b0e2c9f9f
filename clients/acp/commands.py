"""The slash commands the REPL answers itself that an editor lists too (``mapping.ADAPTER_ANSWERS``):
``/review`` (a prompt), ``/cost`` (the loop's ledger with the last turn's usage), ``/mcp`` and
``/memory`` (straight to their services, as the REPL does). The rest go to the loop."""

from __future__ import annotations

import asyncio
from typing import Any

from clients.acp.state import Session
from clients.cli.slash import REVIEW_PROMPT

__all__ = ["REVIEW_PROMPT", "answer"]


async def answer(name: str, args: str, session: Session, client: Any, setup: Any) -> str:
    """The text the REPL would print for ``/name args`` (``client``: the loop client; ``setup``: the
    services' endpoints)."""
    if name == "cost":
        from clients.cli.cost import cost_report

        budget = await client.run_command(session.id, "budget", "")
        return "\n".join(cost_report(session.last_usage, budget.data_json))
    from clients.cli import control
    from clients.cli.repl.service_commands import mcp_command, memory_command

    service = "mcp_gateway" if name == "mcp" else "memory"
    await asyncio.to_thread(control.ensure_running, setup, [service])
    if name == "mcp":
        from clients.cli.connection.services import McpClient

        gateway = McpClient(setup.endpoints["mcp_gateway"])
        try:
            out, _ = await mcp_command(gateway, args, lambda line: None, session.id)
        finally:
            await gateway.close()
        return "\n".join(line for line, _ in out.lines)
    from clients.cli.connection.services import MemoryClient

    memory = MemoryClient(setup.endpoints["memory"], session.workspace)
    try:
        out = await memory_command(memory, args)
    finally:
        await memory.close()
    lines = [line for line, _ in out.lines]
    if out.confirm is not None:  # no y/N in an editor's thread: the terminal asks
        lines.append(f"to forget {out.confirm.note_id} ({out.confirm.text}), run "
                     f"`ai-coding memory forget {out.confirm.note_id}` in a terminal")
    return "\n".join(lines)
