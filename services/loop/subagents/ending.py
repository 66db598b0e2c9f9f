"""The final state of a child run that failed outside its turn (worktree, settle, transcript, a bug)."""

from __future__ import annotations

import json

from services.loop.core.domain import Usage
from services.loop.core.turn_events import SubagentFinished
from services.loop.subagents.packet import PacketStatus, SubagentPacket


def broken_end(run_id: str, name: str, status: PacketStatus, reason: str, elapsed: float, isolation_note: str = ""
               ) -> tuple[SubagentPacket, SubagentFinished]:
    """The packet the parent gets and the event every client sees, both naming ``reason``."""
    packet = SubagentPacket(run_id=run_id, name=name, status=status, exit_reason=reason, elapsed_ms=elapsed,
                            isolation_note=isolation_note)
    event = SubagentFinished(run_id=run_id, name=name, status=status, truncated=False, exit_reason=reason,
                             usage=Usage(), elapsed_ms=elapsed,
                             packet_json=json.dumps(packet.to_json(), ensure_ascii=False))
    return packet, event
